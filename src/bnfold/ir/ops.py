"""What bnfold knows about operator kinds: one table that validation, the recipe chef and every
pass read. Teaching bnfold a new conv-like operator is one `OpInfo` entry here (plus its test).

Columns of `OpInfo`:

    options        the builtin options table the op carries (a file carrying another is rejected;
                   recipes fill this table)
    needs_options  cannot run without its options (strides, padding): LiteRT would read zeros
    arity          (inputs that must be present, outputs), as LiteRT's kernels check them
    fused_output   its fused activation applies to its output, so it can absorb a standalone one
    layer          for conv-like layers, where weights and bias are (`Layer`, below)
    moves_elements a layout op: only moves elements (folds follow a channel through it)
    same_input_types  its first two inputs must have one type (LiteRT's kernels refuse a float32
                   tensor times an int32 or float16 constant at load time)
    commutes_with_scale  op(s·v) = s·op(v) for a positive per-channel s with the channel axis
                   last and kept (pools, MEAN over other axes, zero PAD)
    values_from    inputs whose elements reach the output unchanged up to a cast ("*": every
                   input): an index travels through them (value checks draw index inputs in range)
    indexes        reads one input at the integer values of another (`Indexing`, below)
    layout         how a permutation of its data's axes crosses it (None: it does not), read by
                   the layout propagation (engine/propagation.py, remapping in engine/permute.py):
                     "unary"         elementwise on input 0
                     "elementwise"   elementwise with broadcasting over every input
                     "reduce"        axes in input 1, keep_dims either way
                     "concat"        the axis option
                     "split"         axis in input 0 (SPLIT), "split_v": axis in input 2
                     "slice"         begin/size in inputs 1-2; "strided_slice": begin/end/strides
                     "pad"           one row per axis in input 1: PAD's paddings (a pad value is
                                     one scalar: any layout), TILE's multiples, BROADCAST_TO's shape
                     "last_axis"     works along the last axis: crosses permutations keeping it last
                     "reshape"       RESHAPE/SQUEEZE/EXPAND_DIMS whose merged or split axes stay
                                     adjacent and in order in the other layout (unit axes anywhere)
                     "transpose"     composes with the permutation (cancels or merges)
                     "adjoint"       BATCH_MATMUL: nothing crosses it, but a permutation swapping only
                                     the last two axes of an operand is absorbed by toggling that
                                     operand's adjoint flag (adj_x / adj_y)
    shape          the rule that computes its output shapes from its inputs and options (a name in
                   ir/shapes.py's RULES; None: not checked), read by the output gate
                   (ir/invariants.py: check_changes) for every operator a pass created or changed

`Layer` says which weight axis carries the output channel (backward folds scale it) and which
the input channel (forward folds scale it):

    kind               weights  layout         out axis  in axis  bias  rank
    CONV_2D            1        O H W I        0         3        2     4
    DEPTHWISE_CONV_2D  1        1 H W (I·M)    3         3 (*)    2     4
    TRANSPOSE_CONV     1        O H W I        0         3        3     4   (bias optional 4th input)
    FULLY_CONNECTED    1        O I            0         1        2     2
    CONV_3D            1        D H W I O      4         3        2     5
    CONV_3D_TRANSPOSE  1        D H W O I      3         4        3     5   (bias optional 4th input)

(*) depthwise: input channel i feeds output columns i·M .. i·M+M−1 of axis 3.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

# Enums the IR carries by name, in the schema's order (the same in TFLite and Circle).
FUSED_ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT")
PADDINGS = ("SAME", "VALID")

# Fused activations with act(s·v) = s·act(v) for s > 0: a positive scale crosses them.
HOMOGENEOUS_ACTIVATIONS = frozenset({"NONE", "RELU"})
# Standalone activation operators: elementwise and not affine, so no batch norm crosses them.
ACTIVATION_KINDS = frozenset(
    {
        "RELU",
        "RELU6",
        "RELU_N1_TO_1",
        "RELU_0_TO_1",
        "LEAKY_RELU",
        "PRELU",
        "TANH",
        "LOGISTIC",
        "HARD_SWISH",
        "GELU",
        "ELU",
    }
)
# Standalone activations a producer can take as its fused activation. LiteRT computes fused
# activations as an output *range*, so only the clamping ones; TANH is loaded and then ignored by
# CONV_2D/ADD and refused by FULLY_CONNECTED (LiteRT 2.3), so it never moves into a producer.
RANGE_ACTIVATIONS = ("RELU", "RELU6", "RELU_N1_TO_1")
# Activations whose every output is >= 0, standalone or fused (RELU_0_TO_1 has no fused form).
NON_NEGATIVE_KINDS = frozenset({"RELU", "RELU6", "RELU_0_TO_1"})
NON_NEGATIVE_ACTIVATIONS = frozenset({"RELU", "RELU6"})
# The real range each clamping fused activation keeps (None: unbounded); quantized kernels clamp
# to zp + round(bound / scale) in the output's integers (TFLite's CalculateActivationRangeQuantized).
ACTIVATION_BOUNDS = {"NONE": (None, None), "RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}
# Operators kept by cleanup() even when nothing reads their outputs: they act on state.
SIDE_EFFECT_KINDS = frozenset({"ASSIGN_VARIABLE", "CALL_ONCE", "VAR_HANDLE", "HASHTABLE_IMPORT", "CUSTOM"})
# Types of the index operands (MEAN axes, PAD paddings, TRANSPOSE permutation) LiteRT takes; the
# bytes of any other type mean nothing as indices.
INDEX_DTYPES = frozenset({"INT32", "INT64"})
# operators whose `axis` option counts the axes of their output (negative from the end)
OUTPUT_AXIS_KINDS = frozenset({"CONCATENATION", "PACK"})
# The per-channel elementwise ops a batch norm is lowered to (affine.py folds them).
AFFINE_KINDS = frozenset({"MUL", "ADD", "SUB", "DIV"})


class Layer(NamedTuple):
    backward_pass: str  # the fuse_batchnorm_with_* pass that folds a batch norm after it
    weights: int  # input index of the weights
    bias: int  # input index of the bias (may be absent: folds create it)
    rank: int  # the weights' rank LiteRT insists on
    out_axis: int  # weight axis of the output channels
    in_axis: int  # weight axis of the input channels
    # how the data's C channels lie along in_axis: "exact" (C entries; anything else is a grouped
    # conv), "repeat" (depthwise: channel i feeds columns i·M .. i·M+M−1), "tile" (FC reading a
    # flattened NHWC map: n·C entries, channel k mod C)
    input_channels: str = "exact"
    forward: bool = True  # an input-channel scale folds into it (forward and pre-activation folds)
    # minimum operator versions for what a fold adds (TFLite op_version rules): {"bias": 3, ...}
    versions: tuple[tuple[str, int], ...] = ()
    # runtimes run it without a fused activation in Circle (ONE splits one off): a fold emits a
    # standalone activation op after it instead
    standalone_activation_in_circle: bool = False

    def version_for(self, feature: str) -> int:
        return dict(self.versions).get(feature, 1)


class Indexing(NamedTuple):
    """An op that reads `params` at the integer values of `indices`; LiteRT fails the run when one
    is outside [0, dim) of the params axis it addresses. `axes` says which axis that is: "option"
    (the `axis` option, default 0; GATHER), "first" (axis 0; EMBEDDING_LOOKUP), "leading" (the
    first indices.shape[-1] axes, one per index component; GATHER_ND)."""

    indices: int
    params: int
    axes: str


class OpInfo(NamedTuple):
    kind: str
    options: str | None = None
    arity: tuple[int, int] | None = None
    needs_options: bool = False
    fused_output: bool = False
    layer: Layer | None = None
    moves_elements: bool = False
    commutes_with_scale: bool = False
    same_input_types: bool = False
    values_from: tuple[int, ...] | str = ()
    indexes: Indexing | None = None
    layout: str | None = None
    shape: str | None = None
    # the lowest version LiteRT registers a kernel for: what an op of this kind a pass makes gets
    min_version: int = 1


def _pool(kind: str) -> OpInfo:
    return OpInfo(
        kind,
        "Pool2DOptions",
        (1, 1),
        needs_options=True,
        fused_output=kind != "L2_POOL_2D",
        commutes_with_scale=kind != "L2_POOL_2D",
        shape="pool",
    )


def _binary(
    kind: str, options: str | None, fused: bool = False, same_types: bool = True, layout: str | None = "elementwise"
) -> OpInfo:
    shape = "broadcast" if layout == "elementwise" else None
    return OpInfo(kind, options, (2, 1), fused_output=fused, same_input_types=same_types, layout=layout, shape=shape)


def _unary(kind: str, options: str | None = None, layout: str | None = "unary") -> OpInfo:
    return OpInfo(kind, options, (1, 1), layout=layout, shape="same")


def _reducer(kind: str, **facts) -> OpInfo:
    return OpInfo(kind, "ReducerOptions", layout="reduce", shape="reduce", **facts)


TABLE: tuple[OpInfo, ...] = (
    # conv-like layers
    OpInfo(
        "CONV_2D",
        "Conv2DOptions",
        (2, 1),
        True,
        True,
        Layer("fuse_batchnorm_with_conv", 1, 2, 4, out_axis=0, in_axis=3),
        shape="conv_2d",
    ),
    OpInfo(
        "DEPTHWISE_CONV_2D",
        "DepthwiseConv2DOptions",
        (2, 1),
        True,
        True,
        Layer(
            "fuse_batchnorm_with_dwconv",
            1,
            2,
            4,
            out_axis=3,
            in_axis=3,
            input_channels="repeat",
            versions=(("int8", 3),),  # int8 with per-channel weights (TFLite's op_version rules)
        ),
        shape="depthwise_conv_2d",
    ),
    OpInfo(
        "TRANSPOSE_CONV",
        "TransposeConvOptions",
        (3, 1),
        True,
        False,
        Layer(
            "fuse_batchnorm_with_tconv",
            1,
            3,
            4,
            out_axis=0,
            in_axis=3,
            forward=False,
            versions=(("bias", 3), ("activation", 4)),
            standalone_activation_in_circle=True,
        ),
        shape="given_shape",
    ),
    OpInfo(
        "FULLY_CONNECTED",
        "FullyConnectedOptions",
        (2, 1),
        False,
        True,
        Layer("fuse_batchnorm_with_fc", 1, 2, 2, out_axis=0, in_axis=1, input_channels="tile"),
        shape="fully_connected",
    ),
    OpInfo(
        "CONV_3D",
        "Conv3DOptions",
        (2, 1),
        True,
        True,
        Layer("fuse_batchnorm_with_conv3d", 1, 2, 5, out_axis=4, in_axis=3, forward=False),
        shape="conv_3d",
    ),
    OpInfo(
        "CONV_3D_TRANSPOSE",
        "Conv3DOptions",
        (3, 1),
        True,
        True,
        Layer("fuse_batchnorm_with_conv3d", 1, 3, 5, out_axis=3, in_axis=4, forward=False),
        shape="given_shape",
    ),
    # elementwise
    _binary("ADD", "AddOptions", fused=True),
    _binary("SUB", "SubOptions", fused=True),
    _binary("MUL", "MulOptions", fused=True),
    _binary("DIV", "DivOptions", fused=True),
    _binary("MAXIMUM", "MaximumMinimumOptions"),
    _binary("MINIMUM", "MaximumMinimumOptions"),
    _binary("LESS", "LessOptions"),
    _binary("PRELU", None, same_types=False),
    # hybrid float x int8 is allowed
    _binary("BATCH_MATMUL", "BatchMatMulOptions", same_types=False, layout="adjoint"),
    # elementwise kinds the folds do not read; the layout propagation moves permutations across them
    *(
        OpInfo(kind, layout="elementwise", shape="broadcast")
        for kind in (
            "POW",
            "SQUARED_DIFFERENCE",
            "FLOOR_DIV",
            "FLOOR_MOD",
            "LESS_EQUAL",
            "GREATER",
            "GREATER_EQUAL",
            "EQUAL",
            "NOT_EQUAL",
            "LOGICAL_AND",
            "LOGICAL_OR",
            "SELECT_V2",
            "ADD_N",
        )
    ),
    *(
        OpInfo(kind, layout="unary", shape="same")
        for kind in (
            "RELU_0_TO_1",
            "HARD_SWISH",
            "ELU",
            "ABS",
            "NEG",
            "EXP",
            "LOG",
            "SQRT",
            "RSQRT",
            "SQUARE",
            "SIN",
            "COS",
            "FLOOR",
            "CEIL",
            "ROUND",
            "SIGN",
            "LOGICAL_NOT",
        )
    ),
    # pools and reductions
    _pool("AVERAGE_POOL_2D"),
    _pool("MAX_POOL_2D"),
    _pool("L2_POOL_2D"),
    _reducer("MEAN", arity=(2, 1), commutes_with_scale=True),
    _reducer("SUM"),
    *(_reducer(kind) for kind in ("REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL")),
    # the index along one axis: a reduction without keep_dims
    OpInfo("ARG_MAX", "ArgMaxOptions", (2, 1), layout="reduce", shape="arg_reduce"),
    OpInfo("ARG_MIN", "ArgMinOptions", (2, 1), layout="reduce", shape="arg_reduce"),
    # layout
    OpInfo(
        "TRANSPOSE",
        "TransposeOptions",
        (2, 1),
        moves_elements=True,
        values_from=(0,),
        layout="transpose",
        shape="transpose",
    ),
    OpInfo(
        "RESHAPE", "ReshapeOptions", (1, 1), moves_elements=True, values_from=(0,), layout="reshape", shape="reshape"
    ),
    OpInfo(
        "SQUEEZE", "SqueezeOptions", (1, 1), moves_elements=True, values_from=(0,), layout="reshape", shape="squeeze"
    ),
    OpInfo(
        "EXPAND_DIMS",
        "ExpandDimsOptions",
        (2, 1),
        moves_elements=True,
        values_from=(0,),
        layout="reshape",
        shape="expand_dims",
    ),
    OpInfo("BATCH_TO_SPACE_ND", "BatchToSpaceNDOptions", moves_elements=True),
    # SPACE_TO_BATCH_ND pads with zeros, which a shift would see: not a layout op for folds
    OpInfo("SPACE_TO_BATCH_ND", "SpaceToBatchNDOptions"),
    OpInfo("PAD", "PadOptions", (2, 1), commutes_with_scale=True, layout="pad", shape="pad"),
    OpInfo("PADV2", None, commutes_with_scale=True, layout="pad", shape="pad"),
    OpInfo("MIRROR_PAD", "MirrorPadOptions", layout="pad", shape="pad"),
    OpInfo("TILE", "TileOptions", layout="pad", shape="tile"),
    # LiteRT registers BROADCAST_TO from version 2 ("Didn't find op for builtin opcode 'BROADCAST_TO' version '1'")
    OpInfo("BROADCAST_TO", "BroadcastToOptions", layout="pad", shape="broadcast_to", min_version=2),
    OpInfo("CONCATENATION", "ConcatenationOptions", (1, 1), values_from="*", layout="concat", shape="concatenation"),
    OpInfo("SPLIT", "SplitOptions", layout="split", shape="split"),
    OpInfo("SPLIT_V", "SplitVOptions", layout="split_v", shape="split_v"),
    OpInfo("SLICE", "SliceOptions", values_from=(0,), layout="slice", shape="slice"),
    OpInfo("STRIDED_SLICE", "StridedSliceOptions", values_from=(0,), layout="strided_slice", shape="strided_slice"),
    OpInfo("CAST", "CastOptions", values_from=(0,), layout="unary", shape="same"),
    OpInfo("PACK", "PackOptions", values_from="*"),
    OpInfo("UNPACK", "UnpackOptions", values_from=(0,)),
    # dense tensors from sparse descriptions (constant folding computes them)
    OpInfo("SPARSE_TO_DENSE", "SparseToDenseOptions", (4, 1)),
    OpInfo("DENSIFY", "DensifyOptions", (1, 1)),
    # indexing
    OpInfo("GATHER", "GatherOptions", values_from=(0,), indexes=Indexing(1, 0, "option"), shape="gather"),
    OpInfo("GATHER_ND", "GatherNdOptions", values_from=(0,), indexes=Indexing(1, 0, "leading")),
    OpInfo("EMBEDDING_LOOKUP", values_from=(1,), indexes=Indexing(0, 1, "first")),
    # activations and the rest
    _unary("RELU"),
    _unary("RELU6"),
    _unary("RELU_N1_TO_1"),
    _unary("TANH"),
    _unary("LOGISTIC"),
    _unary("LEAKY_RELU", "LeakyReluOptions"),
    _unary("GELU", "GeluOptions"),
    _unary("SOFTMAX", "SoftmaxOptions", layout="last_axis"),
    _unary("LOG_SOFTMAX", "LogSoftmaxOptions", layout="last_axis"),
    _unary("L2_NORMALIZATION", "L2NormOptions", layout="last_axis"),
    _unary("DEQUANTIZE", "DequantizeOptions"),
    _unary("QUANTIZE", "QuantizeOptions"),
    _unary("FAKE_QUANT", "FakeQuantOptions"),
    OpInfo("INSTANCE_NORM", "InstanceNormOptions", (3, 1), shape="same"),
    # Circle's decoder operators (passes/fuse_rmsnorm.py, fuse_rope.py): x · γ / √(mean(x²) + ε) over the
    # last axis, γ of one or C values; RoPE rotates pairs of the last axis by constant sin/cos tables
    OpInfo("RMS_NORM", "RmsNormOptions", (2, 1), shape="same"),
    OpInfo("ROPE", "RoPEOptions", (3, 1), shape="same"),
    # Circle's attention of a decoder layer (no pass makes it; schemas/derive_runtimes.py probes it): x, the
    # q / k / v / o weights, cos and sin tables, mask, key and value caches, position (onert's newer source)
    OpInfo("ATTENTION", "AttentionOptions", (11, 1), shape="same"),
    OpInfo("WHILE", "WhileOptions"),
    OpInfo("IF", "IfOptions"),
)

OPS: dict[str, OpInfo] = {info.kind: info for info in TABLE}
LAYERS: dict[str, Layer] = {info.kind: info.layer for info in TABLE if info.layer is not None}
LAYOUT_KINDS = frozenset(info.kind for info in TABLE if info.moves_elements)


def info(kind: str) -> OpInfo:
    """The table's entry for `kind` (an empty one for kinds bnfold knows nothing about)."""
    return OPS.get(kind) or OpInfo(kind)


def op_forms(op: Any) -> list[str]:
    """The forms of `op` (an ir/graph.py Op) that the runtime table probes apart, as far as they follow
    from the op alone: "keep_num_dims", a FULLY_CONNECTED keeping the leading axes of an input of
    rank > 2 (onert 0.1.0 flattens them); "input_rank_1", one reading a rank-1 input as one row
    (onert 0.1.0 refuses it); "rank_4_dropping_A[_B]", a reduction of a rank-4 input
    over one or two axes without keep_dims (onert 0.1.0 prepares only the channel axis or the two
    spatial ones). engine/targets.py asks them of every op a pass made and of a graph it may leave."""
    x = op.input(0)
    if x is None:
        return []
    if op.kind == "FULLY_CONNECTED":
        form = fully_connected_form(len(x.shape), bool(getattr(op.options, "keepNumDims", False)))
        return [] if form is None else [form]
    axes = op.input(1)
    if info(op.kind).shape != "reduce" or axes is None or axes.data is None:
        return []
    keep_dims = bool(getattr(op.options, "keepDims", False))
    form = reduction_form(len(x.shape), np.asarray(axes.data).reshape(-1), keep_dims)
    return [] if form is None else [form]


def fully_connected_form(input_rank: int, keep_num_dims: bool) -> str | None:
    """The form a FULLY_CONNECTED reading an input of `input_rank` is probed apart in (`op_forms`), or
    None: a pass about to make one asks the target with it."""
    if keep_num_dims and input_rank > 2:
        return "keep_num_dims"
    return "input_rank_1" if input_rank == 1 else None


def reduction_form(rank: int, axes: Iterable[int], keep_dims: bool) -> str | None:
    """The form a reduction of a rank-`rank` input over `axes` is probed apart in: "rank_4_dropping_A[_B]"
    for a rank-4 input reduced over one or two axes without keep_dims; None for any other."""
    dropped = sorted({int(a) % rank for a in axes}) if rank else []
    if rank != 4 or keep_dims or not 1 <= len(dropped) <= 2:
        return None
    return "rank_4_dropping_" + "_".join(str(a) for a in dropped)
