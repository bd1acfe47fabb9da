"""What a pass is to the registry and the manager: its spec (name, summary, exact, default, the
operator kinds it needs, its parameters) and the kind sets the table names. engine/registry.py holds
the table of every pass, in run order, built from these."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from types import MappingProxyType
from typing import NamedTuple

from ..ir.graph import Graph
from ..ir.ops import LAYERS
from .report import PassResult


class Interface(NamedTuple):
    """A pass's parameters that change the main subgraph's interface once, before the rounds: the
    parameter that asks for the inputs, the one that asks for the outputs, and the permutation
    each changed input or output's shape goes through (what the manager then holds the passes to:
    manager.check_interface). The pass's module does the change: change_interface(graph,
    inputs=, outputs=) -> what changed."""

    inputs: str
    outputs: str
    permutation: tuple[int, ...]


class PassSpec(NamedTuple):
    name: str
    summary: str
    exact: bool  # changes are exact up to float rounding
    default: bool  # part of the default set (only exact passes may be)
    # the operator kinds at least one of which a graph must hold for the pass to do anything there:
    # every match the pass makes, folded or refused, includes an op of one of these kinds, so in a
    # graph without any it has no candidate, hence no fold and no refusal, and the manager skips
    # it (without importing its module). A kind left out here silently loses folds: tests/engine/
    # test_registry.py runs every pass on every recipe lacking its kinds
    needs: frozenset[str]
    # option names that only qualify this pass (ONE's "arguments" of a pass) -> what each does;
    # they change the main subgraph's interface once, before the rounds (`interface`)
    parameters: Mapping[str, str] = MappingProxyType({})
    interface: Interface | None = None

    @property
    def module(self):
        """The pass's module, imported the first time it is asked for."""
        return importlib.import_module(f"bnfold.passes.{self.name}")

    def run(self, graph: Graph) -> PassResult:
        return self.module.run(graph)

    def change_interface(self, graph: Graph, named: AbstractSet[str]) -> dict:
        """The interface change the parameters `named` ask for, made on `graph` (the main
        subgraph) by the pass's module; what changed (the report's `interface`, less the names)."""
        if self.interface is None:
            raise ValueError(f"pass {self.name} changes no interface")
        inputs, outputs = self.interface.inputs in named, self.interface.outputs in named
        return self.module.change_interface(graph, inputs=inputs, outputs=outputs)


def layers_of(backward_pass: str) -> frozenset[str]:
    """The layer kinds a fuse_batchnorm_with_* fold (and ONE's single-op folds into the same
    layers) takes chains after: ir/ops.py names the pass per kind."""
    return frozenset(kind for kind, layer in LAYERS.items() if layer.backward_pass == backward_pass)


TRANSPOSES = frozenset({"TRANSPOSE"})
LAYOUT_MOVES = frozenset({"TRANSPOSE", "RESHAPE"})  # the propagation offers a unit-axis RESHAPE as a TRANSPOSE
RESHAPES = frozenset({"RESHAPE"})
CUSTOM = frozenset({"CUSTOM"})


def opt_in(name: str, kinds, summary: str) -> PassSpec:
    """An exact, opt-in pass under ONE's option name (most of ONE's options are)."""
    return PassSpec(name, summary, True, False, needs=frozenset(kinds))
