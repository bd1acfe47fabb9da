"""What bnfold knows about Samsung ONE's one-optimize: its option names, its O1 group and how a
one-cmds configuration file spells values. This is the only place that knows them.

Sources (facts only), read 2026-11-28 through the stored copies of Samsung/ONE:
- one-optimize's option table, the `constant` module of compiler/one-cmds/onelib @87e0691 (its O1 and
  OPTIMIZATION_OPTS; the newest stored). That table lacks a comma after fuse_horizontal_fc_layers,
  which glues it to transform_min_max_to_relu6; both are listed apart here. The older
  onelib/O1.txt (@004a7a1, which that module read then) is a subset of that O1.
- circle2circle's switches, compiler/circle2circle/src/Circle2Circle.cpp: the newest stored text
  (adds fuse_rmsnorm, fuse_rope, fuse_mul_with_rmsnorm, remove_unnecessary_cast,
  substitute_expand_dims_to_reshape) and @9ada14d (compress_weights_huffman, gone from the newest).
- Added to O1 after that module @87e0691: fuse_mul_with_conv, fuse_mul_with_div,
  fuse_mul_with_fullyconnected (ONE PRs 12057, 12306, 13609). Switches newer than every stored text:
  remove_unnecessary_div and remove_unnecessary_mul (ONE PRs 16080, 16083, 16087; used with
  circle2circle in July 2026), transform_sqrt_div_to_rsqrt_mul in O1 (ONE PR 13396).

Every option named here is one of: a pass of the registry (engine/registry.py, under ONE's name),
a parameter of one, or REFUSED (with the reason). tests/test_one_cmds.py fails on any other.

`O1` below is ONE's group as ONE ships it (a fact). bnfold's `-O1` is that group plus
`O1_DECODER_ADDITIONS`, bnfold's own decision and the one place it is made (`GROUPS`): ONE's
exact decoder fusions, which ONE ships only as switches.

How one-optimize reads a `[one-optimize]` section: option names are case-sensitive; a key it
does not know is an error; an option is on unless its value is one of false / 0 / n (any case);
`input_path` and `output_path` name the files; a section with nothing else switches on no
optional pass. `-O1` (and `O1=True`, `[onecc] include=O1`) adds bnfold's O1 group, `GROUPS["O1"]`.
"""

from __future__ import annotations

# Keys of a [one-optimize] section that are not optimization switches.
PATH_KEYS = ("input_path", "output_path")
# one-optimize's own (non-pass) options: a value, a log or a check switch; bnfold has no use for them.
UTILITY_OPTIONS = ("generate_profile_data", "change_outputs", "verbose", "mute_warnings", "disable_validation")
VALUE_OPTIONS = ("change_outputs",)  # takes a value (output names), not True/False

# ONE's basic optimization group: passes that do not change the model's results (ONE's list, with
# transform_sqrt_div_to_rsqrt_mul, which ONE PR 13396 added to it).
O1 = (
    "fold_add_v2",
    "fold_cast",
    "fold_densify",
    "fold_dequantize",
    "fold_dwconv",
    "fold_fully_connected",
    "fold_gather",
    "fold_sparse_to_dense",
    "fuse_add_with_tconv",
    "fuse_add_with_fully_connected",
    "fuse_batchnorm_with_conv",
    "fuse_batchnorm_with_dwconv",
    "fuse_batchnorm_with_tconv",
    "fuse_activation_function",
    "fuse_mul_with_conv",
    "fuse_mul_with_div",
    "fuse_mul_with_fullyconnected",
    "fuse_instnorm",
    "fuse_prelu",
    "fuse_gelu",
    "fuse_mean_with_mean",
    "fuse_transpose_with_mean",
    "fuse_slice_with_tconv",
    "fuse_horizontal_fc_layers",
    "transform_min_max_to_relu6",
    "transform_min_relu_to_relu6",
    "remove_redundant_reshape",
    "remove_redundant_transpose",
    "remove_unnecessary_add",
    "remove_unnecessary_reshape",
    "remove_unnecessary_slice",
    "remove_unnecessary_strided_slice",
    "remove_unnecessary_split",
    "common_subexpression_elimination",
    "resolve_customop_add",
    "resolve_customop_batchmatmul",
    "resolve_customop_matmul",
    "resolve_customop_max_pool_with_argmax",
    "resolve_customop_splitv",
    "substitute_pack_to_reshape",
    "substitute_padv2_to_pad",
    "substitute_splitv_to_split",
    "substitute_squeeze_to_reshape",
    "substitute_strided_slice_to_reshape",
    "substitute_transpose_to_reshape",
    "forward_reshape_to_unaryop",
    "forward_transpose_op",
    "replace_non_const_fc_with_batch_matmul",
    "replace_with_fc_gelu_fc",
    "transform_sqrt_div_to_rsqrt_mul",
)

# bnfold's additions to O1 (not ONE's; this is the one place bnfold decides them): ONE's decoder fusions
# that ONE ships as circle2circle switches outside its O1. Each is exact as O1 requires (the values
# change by float rounding only: each pass's docstring has the argument), and a fused RMS_NORM / ROPE is
# written only where the target runs it (engine/targets.py), so -O1 cannot make a model the target
# refuses. Without them -O1 changes nothing in the RMS norms and RoPEs every decoder model holds.
O1_DECODER_ADDITIONS = (
    "fuse_rmsnorm",
    "fuse_mul_with_rmsnorm",
    "fuse_rope",
    "fuse_rsqrt",
    "remove_unnecessary_div",
    "remove_unnecessary_mul",
)

# Options bnfold refuses deliberately, and why (a warning names the reason when one is switched on).
REFUSED = {
    "compress_weights_huffman": "in circle2circle @9ada14d only; it stores int8 weights Huffman-coded for "
    "ONE's own decoder, and bnfold writes plain buffers",
}

# Every optimization switch of one-optimize / circle2circle (O1's members and the rest).
PASS_OPTIONS = (
    frozenset(O1)
    | frozenset(REFUSED)
    | {
        "convert_nchw_to_nhwc",
        "nchw_to_nhwc_input_shape",
        "nchw_to_nhwc_output_shape",
        "expand_broadcast_const",
        "fold_mul",
        "fold_reshape",
        "fold_shape",
        "fold_squeeze",
        "fuse_add_to_fullyconnected_bias",
        "fuse_add_with_conv",
        "fuse_bcq",
        "fuse_mul_to_fullyconnected_weights",
        "fuse_preactivation_batchnorm",
        "make_batchnorm_gamma_positive",
        "replace_cw_mul_add_with_depthwise_conv",
        "remove_duplicate_const",
        "remove_fakequant",
        "remove_gather_guard",
        "remove_qdq_for_mpo",
        "remove_quantdequant",
        "remove_redundant_quantize",
        "remove_unnecessary_cast",
        "remove_unnecessary_transpose",
        "replace_sub_with_add",
        "resolve_former_customop",
        "shuffle_weight_to_16x1float32",
        "substitute_expand_dims_to_reshape",
        "decompose_hardswish",
        "decompose_softmax",
        "unroll_unidirseqlstm",
        "dynamic_batch_to_single_batch",
        "exp_disable_sep_transposeconv_actfunc",
        # the decoder passes (circle2circle's newest switches and ONE's PRs, module doc)
        "fuse_rmsnorm",
        "fuse_rope",
        "fuse_rsqrt",
        "fuse_mul_with_rmsnorm",
        "remove_unnecessary_div",
        "remove_unnecessary_mul",
    }
)

# the groups bnfold knows (`-O1`, `O1=True`, `[onecc] include=O1`): ONE's O1 and bnfold's additions
GROUPS = {"O1": O1 + O1_DECODER_ADDITIONS}

# How a configuration value is read. ONE itself treats anything but false/0/n as on; bnfold reads
# only these words and calls anything else an error, so a typo cannot switch a pass on.
TRUE_WORDS = frozenset({"true", "1", "yes", "y", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "n", "off"})


def parse_switch(value: str) -> bool | None:
    """True / False for a configuration value, None when it is neither."""
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


def closest(name: str, candidates, n: int = 3) -> list[str]:
    """The real names nearest to a misspelt one (difflib's ratio), best first."""
    import difflib  # only for a misspelt name

    return difflib.get_close_matches(name, sorted(candidates), n=n, cutoff=0.6)


def did_you_mean(name: str, candidates, prefix: str = "") -> str:
    """' (did you mean a, b?)' for the closest candidates, or '' when none is close."""
    near = closest(name, candidates)
    return f" (did you mean {', '.join(prefix + c for c in near)}?)" if near else ""
