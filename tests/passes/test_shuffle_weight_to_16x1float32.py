"""shuffle_weight_to_16x1float32: onert 0.1.0 rejects the SHUFFLED16x1FLOAT32 weights format and LiteRT
has none, so FC weights of 16-row blocks are refused with the reason; other weights say nothing."""

from __future__ import annotations

import pytest
from test_fuse_bcq import _run, fc_net


@pytest.mark.parametrize("rows, refused", [(16, True), (12, False)])
def test_shuffle_weight_refuses_weights_of_16_row_blocks(rows, refused):
    reasons = _run(fc_net(rows), "shuffle_weight_to_16x1float32")
    assert bool(reasons) == refused and all("SHUFFLED16x1FLOAT32" in reason for reason in reasons)
