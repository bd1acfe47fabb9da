"""Headless Chromium driven over the DevTools protocol on a pipe (no WebSocket library needed).

`--remote-debugging-pipe` makes Chromium read protocol commands from fd 3 and write replies and
events to fd 4, each message JSON ending in a NUL byte. Used by tests/explorer/test_server.py and
scripts/explorer_pictures.py (the README's pictures).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Browser:
    """One headless Chromium with a fresh profile in `profile`, one page."""

    def __init__(self, profile, width: int = 1280, height: int = 900):
        if CHROMIUM is None:
            raise RuntimeError("no chromium on PATH")
        commands_r, self._commands = os.pipe()
        self._replies, replies_w = os.pipe()
        # Chromium expects the pipe ends at fds 3 and 4 in the child.
        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=lambda: (os.dup2(commands_r, 3), os.dup2(replies_w, 4)))
        os.close(commands_r)
        os.close(replies_w)
        self._buffer = b""
        self._next = 0
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

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
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 60) -> None:
        """Until `expression` (JavaScript) is truthy in the page."""
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page never showed {expression!r}")
            time.sleep(0.5)

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
