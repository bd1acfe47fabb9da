"""Samples from and to h5 files: what `check --input/--expected/--write-*` and `run` read and write.

A sample is one value per graph input (or output). Files are read one sample at a time and
written as each sample is computed, so memory does not grow with the number of samples.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from ..errors import UsageError
from ..io.paths import numbered
from ..ir.graph import Tensor
from .diff import conform, match_names
from .h5io import count_samples, has_names, read_samples, write_h5


def numbered_series(paths: list[str]) -> list[str]:
    """`paths` with each missing PATH that names a numbered series (PATH.0.h5, PATH.1.h5, ...,
    what `run --samples N --write-input PATH` and `--output PATH` write) replaced by the files of
    that series, in order: the next step takes the name the last one was given."""
    files = []
    for path in paths:
        if os.path.lexists(path) or not os.path.lexists(numbered(path, 0, 2)):
            files.append(path)  # a file, or nothing to stand for: open_input names the problem
            continue
        index = 0
        while os.path.lexists(numbered(path, index, 2)):
            files.append(numbered(path, index, 2))
            index += 1
    return files


def count_files(paths: list[str]) -> int:
    return sum(count_samples(p) for p in paths)


def input_samples(
    tensors: list[Tensor], paths: list[str], *, cast: bool = False, owner: str = "the model"
) -> Iterator[list[np.ndarray]]:
    """Each sample of each file, its values matched to `tensors` (by name when the file names
    them, and then refused unless they are the model's inputs, `owner` naming it; else by
    position) and conformed to them (shape and dtype; --cast converts a dtype when no value
    changes)."""
    names = [t.name for t in tensors]
    for path in paths:
        named = has_names(path)
        for sample in read_samples(path):
            if len(sample) != len(tensors):
                raise UsageError(f"holds {len(sample)} values; the model has {len(tensors)} inputs", path)
            matched = match_names(names, sample, what=path, named=named, owner=f"{owner}'s inputs")
            yield [conform(t, v, cast=cast, where=f" in {path}") for t, (_, v) in zip(tensors, matched)]


def expected_samples(
    paths: list[str], tensors: list[Tensor] | None = None, owner: str = "the model"
) -> Iterator[list[tuple[str, np.ndarray]]]:
    """Each sample of each file; given the model's outputs `tensors`, a file that names its
    values must name these (else UsageError naming the file and `owner`)."""
    names = [t.name for t in tensors] if tensors is not None else None
    for path in paths:
        named = names is not None and has_names(path)
        for sample in read_samples(path):
            if named:
                match_names(names, sample, what=path, named=True, owner=f"{owner}'s outputs")
            yield sample


sample_path = numbered  # PATH itself for one sample; PATH with .N before the extension for more


class SampleWriter:
    """Writes sample `index` of `count` to its own h5 file as it is computed."""

    def __init__(self, path: str, tensors: list[Tensor], count: int):
        self.path, self.names, self.count = path, [t.name for t in tensors], count

    def path_of(self, index: int) -> str:
        return sample_path(self.path, index, self.count)

    def __call__(self, index: int, values: list[np.ndarray]) -> None:
        write_h5(self.path_of(index), list(zip(self.names, values)))


def sample_sink(graph, count: int, input_path: str | None, output_path: str | None):
    """An on_sample(index, inputs, outputs) for check_models writing the inputs and/or the
    reference model's outputs as each sample is computed; None when neither is asked for."""
    if not input_path and not output_path:
        return None
    write_in = SampleWriter(input_path, graph.inputs, count) if input_path else None
    write_out = SampleWriter(output_path, graph.outputs, count) if output_path else None

    def sink(index: int, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        if write_in:
            write_in(index, inputs)
        if write_out:
            write_out(index, outputs)

    return sink
