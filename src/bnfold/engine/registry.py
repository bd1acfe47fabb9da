"""The one list of passes: names (ONE's flag spellings), what each does, whether it is exact,
whether it runs by default, its parameters, the operator kinds it needs, and the order they run
in. CLI flags are generated from it.

Each pass lives in `bnfold/passes/<name>.py` and exposes `run(graph) -> PassResult` (report.py),
and `change_interface` if its parameters change the interface (its spec's `interface`); the
registry and the manager reach a pass only through its spec, and a pass does not import them.
The table holds every fact about a pass that is asked for before it runs, so a pass's module is
imported only when the pass runs (a run imports only the passes it selected).
"""

from __future__ import annotations

from types import MappingProxyType

from ..errors import UsageError
from ..ir.model import Model
from ..ir.ops import AFFINE_KINDS, OPS, RANGE_ACTIVATIONS
from .pass_specs import CUSTOM, LAYOUT_MOVES, RESHAPES, TRANSPOSES, Interface, PassSpec, layers_of, opt_in

# Run order matters and is fixed here, not by the command line:
# - remove_unnecessary_concat and fuse_hardswish first: structure the folds should see as it is
#   (the 3 and the 1/6 of a decomposed hard swish are scalar constants the batch-norm folds would
#   otherwise take, or fold forward, breaking the pattern);
# - backward folds (BN after a layer, one pass per layer kind) first: they are the most common and free the chain;
# - make_batchnorm_gamma_positive (opt-in, lossy) right before the pre-activation fold it enables;
# - fuse_preactivation_batchnorm after them: a batch norm directly after a layer folds backward
#   completely (for any sign of the scale); only what is left (BN -> ReLU -> layer) is moved
#   across the ReLU, and it may leave standalone RELUs behind;
# - fuse_batchnorm_forward next: a batch norm with no activation before the layers (what the
#   backward folds could not take) moves forward into their input channels;
# - the transpose passes then: TICO's NCHW wrapping leaves transposes around what the folds left
#   (ReLUs, residual ADDs, concatenations, reductions); moving them lets pairs cancel and frees the
#   batch norms they separated from their layers for the next round. ONE's narrower passes first,
#   remove_redundant_transpose (the whole propagation, which subsumes them) last;
# - the RESHAPE passes after them: a TRANSPOSE of unit axes is made a RESHAPE only once the
#   propagation could not cancel it in this round, then RESHAPE chains merge and those that
#   change nothing go;
# - fuse_pad_with_conv after them: the folds and the propagation see the PAD as exported;
# - fuse_activation_function last, to absorb standalone activations the folds leave behind.
PASSES: tuple[PassSpec, ...] = (
    # circle2circle runs it before any pass: the shapes every later pass sees are static
    opt_in("dynamic_batch_to_single_batch", OPS, "make a dynamic input batch 1, shapes static through it"),
    # ONE's constant folds (O1, opt-in), in one-optimize's order: an op whose inputs are all constants
    # is computed once with the value check's kernels (engine/constfold.py), so every later pass sees
    # constants where the model computed them
    *(
        PassSpec(name, summary, True, False, needs=frozenset({kind}))
        for name, kind, summary in (
            ("fold_add_v2", "CUSTOM", "compute TensorFlow's AddV2 (a custom op) of two integer constants"),
            ("fold_cast", "CAST", "compute a CAST of a constant"),
            ("fold_densify", "DENSIFY", "compute a DENSIFY of a sparse constant (the dense constant)"),
            ("fold_dequantize", "DEQUANTIZE", "compute a DEQUANTIZE of a quantized or float16 constant"),
            ("fold_dwconv", "DEPTHWISE_CONV_2D", "compute a DEPTHWISE_CONV_2D of constants"),
            ("fold_fully_connected", "FULLY_CONNECTED", "compute a FULLY_CONNECTED of constants"),
            ("fold_gather", "GATHER", "compute a GATHER of a constant at constant indices"),
            ("fold_sparse_to_dense", "SPARSE_TO_DENSE", "compute a SPARSE_TO_DENSE of constants"),
            ("fold_mul", "MUL", "compute a MUL of two float32 constants"),
            ("fold_reshape", "RESHAPE", "compute a RESHAPE of a constant (the constant in its new shape)"),
            ("fold_shape", "SHAPE", "compute a SHAPE of a tensor whose shape is static (not only of constants)"),
            ("fold_squeeze", "SQUEEZE", "compute a SQUEEZE of a constant"),
        )
    ),
    # ONE's canonicalizations (O1, opt-in): identities go, ops become the simpler kind that computes
    # the same (engine/identity.py decides "every element in order" with the value check's kernels)
    *(
        PassSpec(name, summary, True, False, needs=frozenset(kinds))
        for name, kinds, summary in (
            ("remove_unnecessary_add", {"ADD"}, "remove an ADD of a constant zero"),
            ("remove_unnecessary_slice", {"SLICE"}, "remove a SLICE that keeps its whole input"),
            (
                "remove_unnecessary_strided_slice",
                {"STRIDED_SLICE"},
                "remove a STRIDED_SLICE that keeps its whole input",
            ),
            ("remove_unnecessary_split", {"SPLIT", "SPLIT_V"}, "remove a SPLIT or SPLIT_V into one part"),
            (
                "common_subexpression_elimination",
                frozenset(OPS),
                "compute once what two ops of one kind and options compute from the same inputs",
            ),
            ("remove_duplicate_const", frozenset(OPS), "make constants of equal bytes, type, shape one"),
            ("replace_sub_with_add", {"SUB"}, "replace x - c (c a float32 constant) by x + (-c)"),
            ("resolve_former_customop", CUSTOM, "replace TensorFlow's BroadcastTo (CUSTOM) by BROADCAST_TO"),
            ("substitute_pack_to_reshape", {"PACK"}, "replace a PACK of one tensor by a RESHAPE"),
            (
                "substitute_padv2_to_pad",
                {"PADV2"},
                "replace a PADV2 by a value <= 0 of non-negative data before a MAX_POOL_2D by a PAD",
            ),
            ("substitute_splitv_to_split", {"SPLIT_V"}, "replace a SPLIT_V into equal parts by a SPLIT"),
            ("substitute_squeeze_to_reshape", {"SQUEEZE"}, "replace a SQUEEZE by a RESHAPE"),
            ("substitute_expand_dims_to_reshape", {"EXPAND_DIMS"}, "replace an EXPAND_DIMS by a RESHAPE"),
            ("remove_unnecessary_cast", {"CAST"}, "remove a CAST to the type its input already has"),
            (
                "substitute_strided_slice_to_reshape",
                {"STRIDED_SLICE"},
                "replace a STRIDED_SLICE that only drops unit axes by a RESHAPE",
            ),
            ("remove_unnecessary_mul", {"MUL"}, "remove a MUL by a constant one"),
            ("remove_unnecessary_div", {"DIV"}, "remove a DIV by a constant one"),
            ("fuse_rsqrt", {"SQRT"}, "replace 1 / SQRT(x) by RSQRT(x)"),
            ("transform_sqrt_div_to_rsqrt_mul", {"SQRT"}, "replace x / SQRT(v) by x · RSQRT(v)"),
            (
                "forward_reshape_to_unaryop",
                {"RESHAPE"},
                "move a RESHAPE after the ABS/NEG/LOGISTIC/MUL or DIV by a scalar/MEAN that alone reads it",
            ),
        )
    ),
    # ONE's cleanups of quantized graphs (opt-in), where they change no integer (engine/quantization.py);
    # remove_fakequant is ONE's as it is: lossy, its error measured
    PassSpec(
        "remove_fakequant",
        "remove FAKE_QUANT (lossy: its rounding and clamping go; the output error is measured and reported)",
        False,
        False,
        needs=frozenset({"FAKE_QUANT"}),
    ),
    PassSpec(
        "remove_quantdequant",
        "remove a DEQUANTIZE -> QUANTIZE pair with one type, scale and zero point on both integer sides (and "
        "a QUANTIZE -> DEQUANTIZE of a tensor so dequantized)",
        True,
        False,
        needs=frozenset({"QUANTIZE", "DEQUANTIZE"}),
    ),
    PassSpec(
        "remove_redundant_quantize",
        "remove a QUANTIZE to the parameters its input has; merge QUANTIZE -> QUANTIZE whose second writes what "
        "the first wrote",
        True,
        False,
        needs=frozenset({"QUANTIZE"}),
    ),
    PassSpec(
        "remove_qdq_for_mpo",
        "remove the first of two QUANTIZE/DEQUANTIZE pairs after FULLY_CONNECTED/BATCH_MATMUL where the second "
        "writes what the first wrote",
        True,
        False,
        needs=frozenset({"DEQUANTIZE"}),
    ),
    PassSpec(
        "fold_quantize",
        "compute a QUANTIZE of a float32 constant to int8/uint8 once (refused where a value lies at a rounding tie)",
        True,
        False,
        needs=frozenset({"QUANTIZE"}),
    ),
    PassSpec(
        "fold_quantized_weight_layout",
        "do a TRANSPOSE or RESHAPE of quantized constant weights (also behind their DEQUANTIZE) once on the "
        "stored integers, or on the float32 weights of a QUANTIZE fold_quantize left, the per-channel axis moved "
        "with it",
        True,
        False,
        needs=frozenset({"TRANSPOSE", "RESHAPE"}),
    ),
    PassSpec(
        "fuse_output_requantize",
        "make a quantized CONV_2D/DEPTHWISE_CONV_2D/FULLY_CONNECTED/TRANSPOSE_CONV write the parameters of the "
        "QUANTIZE after it, where one scale makes that change no integer (TICO's fold)",
        True,
        False,
        needs=frozenset({"QUANTIZE"}),
    ),
    PassSpec(
        "remove_unnecessary_concat",
        "remove a CONCATENATION of a single tensor (PyTorch's torch.cat([x]))",
        True,
        True,
        needs=frozenset({"CONCATENATION"}),
    ),
    # matched from its ADD, but every form (refused ones too, which are refused once matched whole)
    # holds a MUL, which a model whose batch norms are folded rarely still has, unlike a residual ADD
    PassSpec(
        "fuse_hardswish",
        "replace the decomposed hard swish x·relu6(x+3)/6 by one HARD_SWISH",
        True,
        True,
        needs=frozenset({"MUL"}),
    ),
    # ONE's opposite rewrite, for runtimes without HARD_SWISH (onert); never run with fuse_hardswish (resolve)
    PassSpec(
        "decompose_hardswish",
        "replace HARD_SWISH by x·relu6(x+3)·(1/6) as ADD/RELU6/MUL, as circle2circle does (onert has no HARD_SWISH)",
        True,
        False,
        needs=frozenset({"HARD_SWISH"}),
    ),
    opt_in("decompose_softmax", {"SOFTMAX"}, "replace SOFTMAX by REDUCE_MAX, SUB, (MUL,) EXP, SUM, DIV as ONE does"),
    # lossy: exact only for indices in [0, N), which the graph cannot show (ONE's own caution)
    PassSpec(
        "remove_gather_guard",
        "make GATHER(p, FLOOR_MOD(ADD(i, N), N)) read i, assuming i >= 0 (ONE's caution); the error is measured",
        False,
        False,
        needs=frozenset({"GATHER"}),
    ),
    # ONE's O1 pattern passes (opt-in; -O1 runs them), in O1's order: canonical forms and fused
    # operators first, so the batch-norm folds below see them as one op and cannot take their
    # scalar constants apart
    opt_in(
        "fuse_mul_with_div",
        {"DIV"},
        "make a MUL by a scalar constant and a DIV by (or of) a scalar constant one DIV or MUL",
    ),
    PassSpec(
        "fuse_instnorm",
        "replace instance normalization written out with MEAN, SQUARED_DIFFERENCE, RSQRT or POW by one "
        "INSTANCE_NORM (Circle only)",
        True,
        False,
        needs=frozenset({"SQUARED_DIFFERENCE"}),
    ),
    # the decoder norms and rotations (Circle only; the target must run them): after the square-root
    # canonical forms above, before any fold could take the γ MUL or a table MUL apart
    opt_in(
        "fuse_rmsnorm",
        {"MEAN"},
        "replace an RMS norm written out (x·rsqrt(mean(x²) + ε), by DIV and SQRT or POW, with or without the γ "
        "MUL) by one RMS_NORM (Circle only)",
    ),
    opt_in(
        "fuse_mul_with_rmsnorm",
        {"RMS_NORM"},
        "fold a MUL by a per-channel or scalar constant after RMS_NORM into its γ",
    ),
    opt_in(
        "fuse_rope",
        {"CONCATENATION", "PACK"},  # every rotation joins its halves with one
        "replace a rotary embedding written out (x·cos + rotate(x)·sin, half-rotation or interleaved) by one "
        "ROPE (Circle only)",
    ),
    opt_in(
        "fuse_attention",
        {"SOFTMAX"},
        "refused, each candidate said why: softmax(Q·Kᵀ·s + mask)·V as one ATTENTION (no target runtime runs it)",
    ),
    opt_in("fuse_prelu", {"ABS"}, "replace relu(x) + α·(x - |x|)·0.5 (PReLU written with ABS) by one PRELU"),
    opt_in(
        "fuse_gelu", CUSTOM, "replace 0.5·x·(1 + erf(x/√2)) written with TensorFlow's Erf (a CUSTOM op) by one GELU"
    ),
    opt_in(
        "fuse_mean_with_mean",
        {"MEAN"},
        "make MEAN over some axes followed by MEAN over others one MEAN over all of them",
    ),
    opt_in(
        "fuse_slice_with_tconv",
        {"TRANSPOSE_CONV"},
        "make a SLICE of a TRANSPOSE_CONV's output part of it (more padding, fewer filters)",
    ),
    opt_in(
        "fuse_horizontal_fc_layers",
        {"FULLY_CONNECTED"},
        "make ADD(FC(x, W1, b1), FC(x, W2, b2)) one FC(x, W1 + W2, b1 + b2)",
    ),
    opt_in(
        "transform_min_max_to_relu6",
        {"MINIMUM", "MAXIMUM"},
        "replace a clamp to [0, 6] written as MINIMUM and MAXIMUM by one RELU6",
    ),
    opt_in("transform_min_relu_to_relu6", {"MINIMUM"}, "replace RELU(MINIMUM(x, 6)) by one RELU6"),
    # TensorFlow ops a converter left as CUSTOM (Select TF ops) made builtins
    PassSpec(
        "resolve_customop_add",
        "replace TensorFlow's AddV2 left as a CUSTOM op by ADD (skipping a BroadcastTo ADD does itself)",
        True,
        False,
        needs=CUSTOM,
    ),
    PassSpec(
        "resolve_customop_batchmatmul",
        "replace TensorFlow's BatchMatMulV2 left as a CUSTOM op by BATCH_MATMUL",
        True,
        False,
        needs=CUSTOM,
    ),
    PassSpec(
        "resolve_customop_matmul",
        "replace TensorFlow's MatMul left as a CUSTOM op by FULLY_CONNECTED (a constant right operand transposed once)",
        True,
        False,
        needs=CUSTOM,
    ),
    PassSpec(
        "resolve_customop_max_pool_with_argmax",
        "replace TensorFlow's MaxPoolWithArgmax left as a CUSTOM op by MAX_POOL_2D and, for the indices, "
        "a per-tap comparison with the maximum (STRIDED_SLICE, EQUAL, SELECT_V2)",
        True,
        False,
        needs=CUSTOM,
    ),
    PassSpec(
        "resolve_customop_splitv",
        "replace TensorFlow's SplitV left as a CUSTOM op by SPLIT_V",
        True,
        False,
        needs=CUSTOM,
    ),
    # bnfold's own, under TICO's option name: what makes a model onert refuses one it runs (default:
    # it acts for the onert target only, and replace_non_const_fc_with_batch_matmul leaves its FC)
    PassSpec(
        "convert_lhs_const_mm_to_fc",
        "for onert, replace a BATCH_MATMUL with a constant left matrix (which onert refuses) by FULLY_CONNECTED",
        True,
        True,
        needs=frozenset({"BATCH_MATMUL"}),
    ),
    PassSpec(
        "replace_non_const_fc_with_batch_matmul",
        "replace a FULLY_CONNECTED whose weights are computed at run time by BATCH_MATMUL (+ RESHAPE, bias ADD)",
        True,
        False,
        needs=frozenset({"FULLY_CONNECTED"}),
    ),
    PassSpec(
        "replace_with_fc_gelu_fc",
        "make FC -> (x·(1 + erf(FC/√2))) -> FC, a GELU TensorFlow folded into the layers, FC -> GELU -> FC",
        True,
        False,
        needs=CUSTOM,
    ),
    PassSpec(
        "fuse_batchnorm_with_conv",
        "fold a Mul/Add/Sub/Div batch-norm chain after CONV_2D into its filter and bias",
        True,
        True,
        needs=layers_of("fuse_batchnorm_with_conv"),
    ),
    # the other layer kinds, same algebra (backward.py); independent of each other, so any order
    PassSpec(
        "fuse_batchnorm_with_dwconv",
        "fold a batch-norm chain after DEPTHWISE_CONV_2D (any depth multiplier) into its filter and bias",
        True,
        True,
        needs=layers_of("fuse_batchnorm_with_dwconv"),
    ),
    PassSpec(
        "fuse_batchnorm_with_tconv",
        "fold a batch-norm chain after TRANSPOSE_CONV into its filter and (created if missing) bias",
        True,
        True,
        needs=layers_of("fuse_batchnorm_with_tconv"),
    ),
    PassSpec(
        "fuse_batchnorm_with_fc",
        "fold a batch-norm chain after FULLY_CONNECTED (also through a RESHAPE keeping the last axis)",
        True,
        True,
        needs=layers_of("fuse_batchnorm_with_fc"),
    ),
    PassSpec(
        "fuse_batchnorm_with_conv3d",
        "fold a batch-norm chain after CONV_3D or CONV_3D_TRANSPOSE into its filter and bias",
        True,
        True,
        needs=layers_of("fuse_batchnorm_with_conv3d"),
    ),
    # a batch norm after a concatenation: each channel slice into the layer that made that part
    PassSpec(
        "fuse_batchnorm_with_concat",
        "fold a batch-norm chain after a CONCATENATION of conv-like layers into each layer's slice of channels "
        "(and its activation into every layer)",
        True,
        True,
        needs=frozenset({"CONCATENATION"}),
    ),
    # ONE's single-op folds: the backward fold restricted to a MUL or an ADD (opt-in, for ONE's
    # flags and O1; the fuse_batchnorm_with_* passes above already fold these and more)
    PassSpec(
        "fuse_mul_with_conv",
        "fold a MUL by a per-channel or scalar constant after CONV_2D into its filter and bias",
        True,
        False,
        needs=layers_of("fuse_batchnorm_with_conv"),
    ),
    PassSpec(
        "fuse_add_with_conv",
        "fold an ADD of a per-channel constant after CONV_2D into its bias",
        True,
        False,
        needs=layers_of("fuse_batchnorm_with_conv"),
    ),
    PassSpec(
        "fuse_add_with_tconv",
        "fold an ADD of a per-channel constant after TRANSPOSE_CONV into its bias",
        True,
        False,
        needs=layers_of("fuse_batchnorm_with_tconv"),
    ),
    PassSpec(
        "fuse_mul_with_fullyconnected",
        "fold a MUL by a per-feature or scalar constant after FULLY_CONNECTED into its weights and bias",
        True,
        False,
        needs=layers_of("fuse_batchnorm_with_fc"),
    ),
    PassSpec(
        "fuse_add_with_fully_connected",
        "fold an ADD of a per-feature constant after FULLY_CONNECTED into its bias",
        True,
        False,
        needs=layers_of("fuse_batchnorm_with_fc"),
    ),
    # ONE's folds of a MUL / ADD *before* a FULLY_CONNECTED (its weights, its bias)
    opt_in("fuse_mul_to_fullyconnected_weights", {"FULLY_CONNECTED"}, "fold a MUL before FULLY_CONNECTED into W"),
    opt_in("fuse_add_to_fullyconnected_bias", {"FULLY_CONNECTED"}, "fold an ADD before FULLY_CONNECTED into b"),
    PassSpec(
        "make_batchnorm_gamma_positive",
        "replace negative scales of a Mul -> Add(RELU) batch norm by 1e-10 (as ONE does) so the "
        "pre-activation fold can proceed; the output error is measured and reported",
        False,
        False,
        needs=frozenset({"MUL"}),
    ),
    PassSpec(
        "replace_quantized_mul_add_with_depthwise_conv",
        "replace an int8 MUL -> ADD by per-channel constants (a batch norm left in an integer graph) by one int8 "
        "1x1 DEPTHWISE_CONV_2D (lossy: one rounding instead of three; the error is measured, in quantization steps)",
        False,
        False,
        needs=frozenset({"MUL"}),
    ),
    PassSpec(
        "fuse_preactivation_batchnorm",
        "fold a batch norm + ReLU before conv/FC layers (ResNetV2): scale forward into the layers' "
        "input channels, shift back into the preceding bias",
        True,
        True,
        needs=AFFINE_KINDS,
    ),
    PassSpec(
        "fuse_batchnorm_forward",
        "fold a batch-norm chain before CONV_2D/DEPTHWISE_CONV_2D/FULLY_CONNECTED (also through a flatten "
        "to FC) into their input channels; the shift into the bias where padding cannot see it, else "
        "kept as one ADD",
        True,
        True,
        needs=AFFINE_KINDS,
    ),
    # after every fold that removes a batch norm outright: only what none of them took is replaced
    PassSpec(
        "replace_cw_mul_add_with_depthwise_conv",
        "replace a channel-wise MUL/ADD chain no layer absorbs by one 1x1 DEPTHWISE_CONV_2D",
        True,
        False,
        needs=AFFINE_KINDS,
    ),
    PassSpec(
        "remove_unnecessary_transpose", "remove TRANSPOSEs with the identity permutation", True, False, needs=TRANSPOSES
    ),
    PassSpec(
        "forward_transpose_op",
        "move TRANSPOSEs forward through elementwise ops (constants permuted) where they then cancel or merge",
        True,
        False,
        needs=TRANSPOSES,
    ),
    PassSpec(
        "fuse_transpose_with_mean",
        "absorb a TRANSPOSE before MEAN (and other reductions) into their axes where nothing else needs it",
        True,
        False,
        needs=TRANSPOSES,
    ),
    PassSpec(
        "convert_nchw_to_nhwc",
        "compute an NCHW graph in NHWC inside: unit-axis RESHAPEs count as transposes and move through the "
        "NCHW ops until they cancel; with nchw_to_nhwc_input_shape / _output_shape the 4-D inputs / outputs "
        "become NHWC",
        True,
        False,
        needs=LAYOUT_MOVES,
        parameters=MappingProxyType(
            {
                "nchw_to_nhwc_input_shape": "make the model's 4-D inputs NHWC (its interface changes)",
                "nchw_to_nhwc_output_shape": "make the model's 4-D outputs NHWC (its interface changes)",
            }
        ),
        interface=Interface("nchw_to_nhwc_input_shape", "nchw_to_nhwc_output_shape", (0, 2, 3, 1)),
    ),
    PassSpec(
        "remove_redundant_transpose",
        "move TRANSPOSEs (and RESHAPEs moving only unit axes) through elementwise ops, reductions, "
        "concat/split/slice/pad, reshapes and a flatten into FC until they cancel or merge, where that "
        "removes more transposes than it adds",
        True,
        True,
        needs=LAYOUT_MOVES,
    ),
    # opt-in: a TRANSPOSE of unit axes may still cancel with another across the ops between them
    # (remove_redundant_transpose), which a RESHAPE would not
    PassSpec(
        "substitute_transpose_to_reshape",
        "replace a TRANSPOSE that moves only unit axes by a RESHAPE",
        True,
        False,
        needs=TRANSPOSES,
    ),
    PassSpec(
        "remove_redundant_reshape",
        "make RESHAPE -> RESHAPE one RESHAPE of the first one's input",
        True,
        True,
        needs=RESHAPES,
    ),
    PassSpec(
        "remove_unnecessary_reshape",
        "remove a RESHAPE whose output shape is its input shape, or a flatten only FULLY_CONNECTED layers read",
        True,
        True,
        needs=RESHAPES,
    ),
    PassSpec(
        "fuse_pad_with_conv",
        "remove a zero PAD before a VALID CONV_2D/DEPTHWISE_CONV_2D that pads what SAME would (SAME instead)",
        True,
        True,
        needs=frozenset({"PAD", "PADV2"}),
    ),
    # ONE's last options; the last two write formats no target runtime runs (each candidate refused)
    opt_in("expand_broadcast_const", {"ADD", "MUL", "DIV"}, "write out a constant broadcast along the last axis"),
    opt_in("exp_disable_sep_transposeconv_actfunc", {"TRANSPOSE_CONV"}, "what bnfold does: changes nothing"),
    opt_in("unroll_unidirseqlstm", {"UNIDIRECTIONAL_SEQUENCE_LSTM"}, "unroll an LSTM into per-step ops"),
    opt_in("fuse_bcq", {"FULLY_CONNECTED", "GATHER"}, "refused: BCQ operators are in neither LiteRT nor ir/ops.py"),
    opt_in("shuffle_weight_to_16x1float32", {"FULLY_CONNECTED"}, "refused: 16x1 weights run in no target runtime"),
    PassSpec(
        "fuse_activation_function",
        "fuse a standalone RELU/RELU6/RELU_N1_TO_1 into the fused activation of its producer",
        True,
        True,
        needs=frozenset(RANGE_ACTIVATIONS),
    ),
)

BY_NAME = {p.name: p for p in PASSES}
UNDOING = frozenset({"fuse_hardswish", "decompose_hardswish"})  # each undoes the other: a run takes one
PARAMETERS = {name: p.name for p in PASSES for name in p.parameters}  # parameter -> the pass it qualifies
# the exact passes for quantized graphs (none default: each is asked for), in their order of the table
QUANTIZED_GRAPH_PASSES: tuple[str, ...] = ("remove_quantdequant", "remove_redundant_quantize", "remove_qdq_for_mpo")
QUANTIZED_GRAPH_PASSES += ("fuse_output_requantize", "fold_quantize", "fold_quantized_weight_layout")
assert all(p.exact for p in PASSES if p.default), "a default pass must be exact"


def default_passes() -> list[str]:
    return [p.name for p in PASSES if p.default]


def lossy_passes_in(folds: list[dict]) -> list[str]:
    """The lossy (exact=False) passes that folded something, sorted: what values/lossy.py measures."""
    return sorted({f["pass"] for f in folds if f["pass"] in BY_NAME and not BY_NAME[f["pass"]].exact})


def resolve(names) -> list[PassSpec]:
    """Specs for `names` (any order, duplicates allowed; parameters are left to `parameters_in`),
    in registry order."""
    wanted = set()
    for name in names:
        name = name.strip()
        if not name or name in PARAMETERS:
            continue
        if name not in BY_NAME:
            raise UsageError(f"unknown pass {name!r} (see 'bnfold passes')")
        wanted.add(name)
    if UNDOING <= wanted:
        raise UsageError(f"{' and '.join(sorted(UNDOING))} undo each other: choose one")
    return [p for p in PASSES if p.name in wanted]


def parameters_in(names) -> set[str]:
    """The pass parameters among `names`."""
    return {name.strip() for name in names if name.strip() in PARAMETERS}


def with_interface_of(model: Model, interface: dict | None) -> Model:
    """`model` with the interface change a run recorded (Report.interface) applied and nothing
    else: what an optimized model whose inputs or outputs were made NHWC is compared with."""
    if interface is not None:
        named = interface["parameters"]
        BY_NAME[PARAMETERS[named[0]]].change_interface(model.graphs[0], set(named))
    return model
