"""remove_unnecessary_transpose (ONE's option): a TRANSPOSE whose permutation is the identity only
copies, so it goes (propagation.remove_identities):

    before:  x -> TRANSPOSE(0,1,2,3) -> y -> ...       after:  x -> ...
    a graph output keeps its name:  x's producer writes y directly.
"""

from __future__ import annotations

from ..engine.propagation import remove_identities
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return remove_identities(graph)
