"""What each runtime runs (ir/runtimes.py) is what the installed runtimes run: the table is
re-derived here from LiteRT and onert themselves (schemas/derive_runtimes.py), like the schema
tables from the bindings. Where onert is not installed its column is not checked."""

from __future__ import annotations

import sys
from importlib.metadata import version

import pytest

from bnfold.ir.miscomputed import OTHERWISE
from bnfold.ir.runtimes import BY_POSITION, POSITION_PROBED, PROBED, RUNS, VERSIONS
from bnfold.values import onert
from conftest import ROOT

sys.path.insert(0, str(ROOT / "schemas"))
import derive_runtimes  # noqa: E402  (a maintainer script, not part of the package)

RUNTIMES = ("litert",) if onert.missing() else ("litert", "onert")


def test_the_table_is_what_the_installed_runtimes_run():
    otherwise: dict = {}
    derived = derive_runtimes.derive(RUNTIMES, otherwise)
    for runtime in RUNTIMES:
        runs = set(derived[runtime])
        assert runs == set(RUNS[runtime]), (
            f"{runtime} {version('ai-edge-litert' if runtime == 'litert' else 'onert')} (table: {VERSIONS[runtime]}): "
            f"now runs {sorted(runs - RUNS[runtime])}, no longer {sorted(RUNS[runtime] - runs)}; "
            "re-run schemas/derive_runtimes.py"
        )
        assert set(otherwise.get(runtime, [])) == OTHERWISE[runtime], "re-run schemas/derive_runtimes.py"
    assert PROBED == set(derive_runtimes.probes())


def test_the_kernels_computing_by_position_are_what_the_installed_runtimes_do():
    derived = derive_runtimes.derive_by_position(RUNTIMES)
    for runtime in RUNTIMES:
        assert set(derived[runtime]) == set(BY_POSITION[runtime]), f"{runtime}: re-run schemas/derive_runtimes.py"
    assert POSITION_PROBED == set(derive_runtimes.POSITION_PROBES)
    # the facts engine/permute.py relies on: LiteRT 2.3 rounds an 8-bit (re)quantization by position (the
    # layout fuzzer's seeds 7 and 1207), a per-channel one (PT2E's weights) alike everywhere
    assert {("QUANTIZE", "from FLOAT32 to INT8"), ("QUANTIZE", "from INT8 to INT8")} <= BY_POSITION["litert"]
    assert ("QUANTIZE", "from FLOAT32 to INT8 per channel") not in BY_POSITION["litert"]
    assert ("DEQUANTIZE", "from INT8 to FLOAT32 zero point 0") not in BY_POSITION["litert"]


@pytest.mark.parametrize("probe", [("HARD_SWISH", "NONE"), ("CONV_2D", "TANH"), ("CONCATENATION", "RELU")])
def test_the_table_holds_the_facts_the_passes_rely_on(probe):
    assert probe in PROBED
    if probe == ("HARD_SWISH", "NONE"):  # onert 0.1.0: "Unsupported operation: HARD_SWISH"
        assert probe in RUNS["litert"] and probe not in RUNS["onert"]
    else:  # loaded and then ignored, or refused: no runtime computes it
        assert all(probe not in runs for runs in RUNS.values())
    for kind in ("ADD", "MUL", "RELU6", "CONV_2D", "DEPTHWISE_CONV_2D"):
        assert all((kind, "NONE") in runs for runs in RUNS.values())
