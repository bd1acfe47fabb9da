"""Proving values: runners (onert, LiteRT, the reference interpreter), diffs, h5 files, checks.

The names the library and the command line offer before any of it runs are here, so offering
them (click's choices, api's defaults) imports none of the machinery.
"""

BACKENDS = ("auto", "litert", "onert", "reference")  # backend.py: who runs a model in a check
CHECK_MODES = ("auto", "whole", "local")  # verify.py: what optimize --check compares
DEFAULT_RTOL = 1e-5  # diff.py: the default tolerance (ONE's value tests)
DEFAULT_ATOL = 1e-5
CRITERION = "|a - b| <= atol + rtol * max|a|"
