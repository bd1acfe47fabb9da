"""Running a model in LiteRT or onert for the measurement scripts (zoo.py, parity.py,
tico_circle.py): the runners, the largest output error between two models and their paired
latency. Its own module, so that the scripts that use it import it rather than each other."""

from __future__ import annotations

import statistics
import time

import numpy as np


def _litert_runner(model):
    from bnfold.values import litert

    interp = litert.model_interpreter(model, resolver="default")
    return lambda x: litert.invoke(interp, x)


def _onert_runner(model):
    from bnfold.values import onert  # one thread, as LiteRT is measured (values/onert.py sets NUM_THREADS=1)

    return onert.Session(model)


# runtime -> runner(model) -> run(inputs) -> outputs: LiteRT's default kernels (XNNPACK, one thread),
# onert's cpu backend (one thread)
RUNNERS = {"litert": _litert_runner, "onert": _onert_runner}


def max_error(original, optimized, inputs, runtime: str = "litert") -> tuple[float, float]:
    worst, scale = 0.0, 0.0
    run_a, run_b = RUNNERS[runtime](original), RUNNERS[runtime](optimized)
    for x in inputs:
        for a, b in zip(run_a(x), run_b(x)):
            worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b))))
            scale = max(scale, float(np.max(np.abs(a))))
    return worst, worst / scale if scale else worst


def paired_speed(
    original, optimized, x, rounds: int, blocks: int = 5, runtime: str = "litert", clock=time.perf_counter
) -> tuple[float, float, float]:
    """(median t_original / t_optimized, median ms original, median ms optimized) in `runtime`, timed
    by `clock` (wall time; time.process_time: the CPU time of this process, which other processes on
    a loaded machine disturb less, the runtimes running one thread).

    `clock`: wall-clock time by default; time.thread_time counts only the CPU time of this thread
    (LiteRT and onert run one thread here, the caller's), which other processes on a busy machine
    disturb less than the wall clock.

    One sample is `reps` back-to-back invocations, enough for about 20 ms, so that small models
    are not measured at the timer's resolution. The rounds run in `blocks`, each with a new pair
    of interpreters: one interpreter instance can be a few percent faster or slower than another
    of the same model (where its buffers landed), which no number of rounds would average out."""
    times: list[list[float]] = [[], []]
    reps = None
    for block in range(blocks):
        runs = [RUNNERS[runtime](m) for m in (original, optimized)]
        for run in runs:
            for _ in range(3):
                run(x)
        if reps is None:
            start = clock()
            runs[0](x)
            reps = max(1, int(0.02 / max(clock() - start, 1e-6)))
        for r in range(-(-rounds // blocks)):
            for which in (0, 1) if (r + block) % 2 == 0 else (1, 0):
                start = clock()
                for _ in range(reps):
                    runs[which](x)
                times[which].append((clock() - start) / reps)
        del runs
    ratios = [a / b for a, b in zip(*times)]
    return statistics.median(ratios), 1e3 * statistics.median(times[0]), 1e3 * statistics.median(times[1])
