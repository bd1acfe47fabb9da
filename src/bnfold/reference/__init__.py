"""The reference interpreter: numpy kernels for every operator bnfold runs itself, over the IR.

Two users share it and neither imports the other: the value check (values/: a model LiteRT or
onert cannot run, the per-rewrite check) and the engine (engine/constfold.py computes an op of
constants, engine/identity.py asks whether an op passes its input through). It imports only the
IR and errors.py (tests/test_layers.py).
"""
