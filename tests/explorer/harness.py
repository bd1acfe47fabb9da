"""Model Explorer's server as a user starts it, and headless Chromium driven over the DevTools protocol.

Used by tests/explorer/test_server.py, scripts/explorer_open_time.py and scripts/explorer_pictures.py
(the README's pictures). Chromium is driven on a pipe, so no WebSocket library is needed:
`--remote-debugging-pipe` makes it read protocol commands from fd 3 and write replies and events
to fd 4, each message JSON ending in a NUL byte.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from portpicker import pick_unused_port  # a dependency of ai-edge-model-explorer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
START_TIMEOUT = 90  # seconds: the server imports Flask and the extensions first


class Server:
    """`python -m model_explorer MODEL --extensions=bnfold.explorer --node_data_paths=ND` on a free port;
    `page` is the address it prints (the page's URL, with the model and node data encoded in it)."""

    def __init__(self, model, node_data, log):
        self.port = pick_unused_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._output = open(log, "w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "model_explorer",
                str(model),
                "--extensions=bnfold.explorer",
                f"--node_data_paths={node_data}",
                "--no_open_in_browser",
                "--host=127.0.0.1",
                f"--port={self.port}",
            ],
            stdout=self._output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self.page = self._wait_for_page()
        except BaseException:
            self.stop()
            raise

    def _wait_for_page(self) -> str:
        """The address the server prints once it answers (with the models and node data it was given)."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"server exited: {self.log.read_text()}"
            printed = [w for w in self.log.read_text().split() if w.startswith(f"{self.base}/?data=")]
            if printed:
                return printed[0]
            time.sleep(0.2)
        raise AssertionError(f"no server after {START_TIMEOUT} s: {self.log.read_text()}")

    def get(self, route: str, **query):
        url = f"{self.base}{route}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        with urllib.request.urlopen(url, timeout=60) as r:
            return json.loads(r.read())

    def post(self, route: str, body: dict):
        request = urllib.request.Request(
            f"{self.base}{route}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)  # its own session: the server and its threads
        self.process.wait(timeout=30)
        self._output.close()


def _numbered_above_4(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """One headless Chromium with a fresh profile in `profile`, one page."""

    def __init__(self, profile, width: int = 1280, height: int = 900):
        if CHROMIUM is None:
            raise RuntimeError("no chromium on PATH")
        commands_r, self._commands = os.pipe()
        self._replies, replies_w = os.pipe()
        # Chromium expects the pipe ends at fds 3 and 4 in the child: move them clear of 3 and 4 first.
        commands_r, replies_w = _numbered_above_4(commands_r), _numbered_above_4(replies_w)
        self.process = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=lambda: (os.dup2(commands_r, 3), os.dup2(replies_w, 4)),
        )
        os.close(commands_r)
        os.close(replies_w)
        self._buffer = b""
        self._next = 0
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def call(self, method: str, session: bool = False, **params) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the protocol pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)

    def evaluate(self, expression: str):
        result = self.call(
            "Runtime.evaluate", session=True, expression=expression, returnByValue=True, awaitPromise=True
        )
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 60) -> None:
        """Until `expression` (JavaScript) is truthy in the page."""
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page never showed {expression!r}")
            time.sleep(0.5)

    def settle(self, timeout: float = 30) -> None:
        """Until two screenshots a second apart are the same (animations and re-layouts done)."""
        deadline, last = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            shot = self.call("Page.captureScreenshot", session=True, format="png")["data"]
            if shot == last:
                return
            last = shot
            time.sleep(1)
        raise TimeoutError(f"the page still changed after {timeout} s")

    def screenshot(self, path, clip: dict | None = None) -> None:
        params = {"format": "png"} if clip is None else {"format": "png", "clip": {**clip, "scale": 1}}
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except RuntimeError:
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._replies)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
