"""The engine the passes are built on, apart from them: the registry (what passes exist, their order,
the default set), the manager (runs them to a fixpoint), the report, the affine-chain matcher and the
two fold directions (backward into a producer, forward into consumers), the layout propagation
(permute, propagation, layout, reshapes), and what is left (candidates, leftovers).

passes/ holds one module per option a user can name (ONE's flag); each imports what it needs from
here, and nothing here imports a pass except the registry, by name, when that pass is asked for."""
