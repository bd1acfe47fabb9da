"""How much a passing value check proved, per output.

A comparison proves something about a rewrite only where a difference the rewrite made would
reach the output it looks at. Real models on random inputs often have outputs that hardly move:
a sigmoid saturated at 0 or 1, a softmax with one winner, argmax indices, an output that is a
constant. Any model that produces the same few values passes a check of them. Per output, over
the check's samples (the reference model's values):

- `varied`: the fraction of elements whose value changes across the samples by more than the
  check's own tolerance (atol + rtol * max|a|; integers: any change). An element that stays
  within the tolerance is, to the check, a constant. Needs two samples or more.
- `distinct`: the smallest fraction, over the samples, of distinct values among the output's
  elements (outputs of more than one element): a saturated sigmoid has two, argmax indices a
  few, a smooth output nearly as many as elements.
- integer and bool outputs are discrete: a difference upstream shows only where it flips a value.

The level: "none" when no element varies (the check proved nothing about this output), "weak"
when the output is discrete or fewer than WEAK of its elements vary or are distinct, else "full".
Memory: two copies of each output (its running min and max), whatever the number of samples.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..check_names import describe

WEAK = 0.1


@dataclass
class Strength:
    name: str
    level: str  # "full", "weak", "none"
    varied: float | None
    distinct: float | None
    why: str = ""

    @property
    def weak(self) -> bool:
        return self.level != "full"

    def as_note(self) -> dict:
        return {"level": self.level, "varied": self.varied, "distinct": self.distinct, "why": self.why}


class Spread:
    """Accumulates one output's values, sample by sample, for its Strength."""

    def __init__(self, name: str):
        self.name = name
        self.samples = 0
        self.low: np.ndarray | None = None  # elementwise min and max over the samples
        self.high: np.ndarray | None = None
        self.peak = 0.0
        self.distinct: float | None = None
        self.discrete = False
        self.measurable = True

    def add(self, value) -> None:
        a = np.asarray(value)
        self.samples += 1
        if a.dtype.kind not in "biuf" or not self.measurable:
            self.measurable = False  # strings, complex values: no notion of spread here
            return
        self.discrete = a.dtype.kind in "biu"
        flat = a.reshape(-1).astype(np.float64)
        if flat.size > 1:
            share = np.unique(flat).size / flat.size
            self.distinct = share if self.distinct is None else min(self.distinct, share)
        finite = flat[np.isfinite(flat)]
        self.peak = max(self.peak, float(np.abs(finite).max(initial=0.0)))
        if self.low is None or self.high is None:  # the first sample (they are set together)
            self.low, self.high = flat.copy(), flat.copy()
        elif self.low.shape != flat.shape:  # an output whose shape changes: no elementwise spread
            self.measurable = False
        else:
            np.fmin(self.low, flat, out=self.low)
            np.fmax(self.high, flat, out=self.high)

    def strength(self, rtol: float, atol: float) -> Strength:
        if not self.measurable or self.low is None:
            return Strength(self.name, "full", None, None, "not measured")
        varied = None
        if self.samples >= 2 and self.low.size:
            bound = 0.0 if self.discrete else atol + rtol * self.peak
            with np.errstate(invalid="ignore"):
                varied = float(np.mean(self.high - self.low > bound))
        return _judge(self.name, varied, self.distinct, self.discrete, self.samples, self.low.size)


def _judge(
    name: str, varied: float | None, distinct: float | None, discrete: bool, samples: int, size: int
) -> Strength:
    if varied == 0.0:
        return Strength(name, "none", varied, distinct, f"does not change across the {samples} samples")
    reasons = []
    if discrete:
        reasons.append("integer output: a difference upstream shows only where it flips a value")
    if varied is not None and varied < WEAK:
        reasons.append(f"{varied:.1%} of its {size} elements change across the {samples} samples")
    if distinct is not None and distinct < WEAK and not discrete:  # a few classes are what an argmax has
        reasons.append(f"as few as {max(1, round(distinct * size))} distinct values in {size} elements (saturated?)")
    return Strength(name, "weak" if reasons else "full", varied, distinct, "; ".join(reasons))


def caveat(strengths: list[Strength], spelling: Callable[[str], str] = str) -> str | None:
    """One line naming the outputs a passing check proved little about (by `spelling` of their
    names), or None."""
    weak = [s for s in strengths if s.weak]
    if not weak:
        return None
    return f"weak check: {'; '.join(describe(spelling(s.name), s.level, s.why) for s in weak)}"
