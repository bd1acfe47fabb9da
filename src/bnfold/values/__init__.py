"""Proving values: runners (onert, LiteRT, the reference interpreter), diffs, h5 files, checks.

The names the library and the command line offer before any of it runs (backends, check modes,
the default tolerance) are in check_names.py, outside this package, so offering them imports
nothing of it; they are re-exported here for the modules of the check.
"""

from ..check_names import BACKENDS as BACKENDS
from ..check_names import CHECK_MODES as CHECK_MODES
from ..check_names import CRITERION as CRITERION
from ..check_names import DEFAULT_ATOL as DEFAULT_ATOL
from ..check_names import DEFAULT_RTOL as DEFAULT_RTOL
