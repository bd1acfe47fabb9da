"""unroll_unidirseqlstm: UNIDIRECTIONAL_SEQUENCE_LSTM becomes the ops of each time step (ONE's pass
of that name: for backends without an LSTM kernel).

    before:  x [B, T, F] -> UNIDIRECTIONAL_SEQUENCE_LSTM -> y [B, T, U]
    after:   x -> UNPACK(T, time axis) -> x_t [B, F]
             step t:  FULLY_CONNECTED(x_t, Wx, b) [+ FULLY_CONNECTED(h_t-1, Wh)] -> SPLIT(4) -> i, f, g, o
                      i, f, o = LOGISTIC;  g = TANH
                      c_t = i·g (t = 0) or f·c_t-1 + i·g;  [MINIMUM(MAXIMUM(c_t, -clip), clip)]
                      h_t = o · TANH(c_t)
             PACK(h_0 .. h_T-1, time axis) -> y     (T = 1: RESHAPE(h_0) -> y)

Wx, Wh and b stack the four gates' matrices and biases (input, forget, cell, output: LiteRT's
order), so one FULLY_CONNECTED computes every gate's pre-activation (as ONE does; every op is of
rank 2, which onert needs: it ignores FULLY_CONNECTED's keep_num_dims). The algebra is LiteRT's
float kernel, step by step: gate = b + W·x + R·h, then the sigmoids and tanh, c = f·c + i·g,
clipped, h = o·tanh(c). Exact up to float rounding: the same operations, the dot products summed
in another order.

The initial states are zero, as ONE makes them. LiteRT keeps an LSTM's state in variable tensors
from one invocation to the next (the TFLite converter writes Keras' stateless LSTM so: two
invocations on the same input differ), so the unrolled model computes what the original computes
on its first invocation, or after reset_all_variables: the function the Keras layer computes,
not a stream. bnfold's value check resets variables before every sample (values/litert.py).

Guards (ONE's assumptions, checked): float32, not quantized; every gate's weights and bias a
float32 constant (no CIFG), no peephole, projection or layer-norm inputs; the activation TANH (the
kernel applies it to the cell gate and the cell output: ONE writes TANH); the state inputs
variables with no data (zeros) that nothing else reads; static shapes. Also: the target runs
every op made (engine/targets.py).
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import float_const, shapes_hold
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options, Tensor
from ..ir.ops import FUSED_ACTIVATIONS

KINDS = frozenset({"UNIDIRECTIONAL_SEQUENCE_LSTM"})
INPUT_WEIGHTS, RECURRENT_WEIGHTS, BIASES = (1, 2, 3, 4), (5, 6, 7, 8), (12, 13, 14, 15)  # gates i, f, c, o
ABSENT = (9, 10, 11, 16, 17, 20, 21, 22, 23)  # peepholes, projection, layer norms
STATES = (18, 19)  # output state, cell state
MADE = ("FULLY_CONNECTED", "UNPACK", "SPLIT", "LOGISTIC", "TANH", "MUL", "ADD", "PACK", "RESHAPE")
NONE, TANH = FUSED_ACTIVATIONS.index("NONE"), FUSED_ACTIVATIONS.index("TANH")


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for lstm in [op for op in graph.ops if op.kind in KINDS]:
        reason = _refusal(graph, lstm)
        if reason is not None:
            result.refuse_value(lstm, reason)
            continue
        made = [*MADE, *(("MAXIMUM", "MINIMUM") if _clip(lstm) else ())]
        reason = next((r for kind in made if (r := targets.refusal(graph, kind)) is not None), None)
        if reason is not None:
            result.not_for_target(lstm, reason)
            continue
        x, y = lstm.operand(0), lstm.outputs[0]
        result.fold(lstm, [lstm], into=[], steps=y.shape[_time_axis(lstm)], units=y.shape[-1])
        graph.remove_op(lstm)
        for op in _unroll(graph, lstm, x, y):
            result.made(op)
    return result


def _refusal(graph: Graph, lstm: Op) -> str | None:
    options = lstm.options
    x, y = lstm.input(0), lstm.outputs[0]
    if x is None or len(lstm.outputs) != 1 or x.dtype != "FLOAT32" or y.dtype != "FLOAT32":
        return "not a float32 LSTM with one output"
    if x.is_quantized or y.is_quantized or getattr(options, "asymmetricQuantizeInputs", False):
        return "quantized"
    if len(x.shape) != 3 or -1 in x.signature or -1 in y.signature or len(y.shape) != 3:
        return "its input and output are not of a static rank-3 shape"
    if getattr(options, "fusedActivationFunction", TANH) != TANH or getattr(options, "diagonalRecurrentTensors", False):
        return "its activation is not TANH (the form ONE unrolls)"
    if any(float_const(lstm.input(i)) is None for i in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS, *BIASES)):
        return "a gate's weights or bias are not a float32 constant (CIFG, or computed)"
    if any(lstm.input(i) is not None for i in ABSENT):
        return "it has peephole, projection or layer-norm inputs"
    for i in STATES:
        state = lstm.input(i)
        if state is None or state.is_const or state.producer is not None or graph.is_observed(state):
            return "its state inputs are not variables starting at zero"
        if len(graph.consumers(state)) != 1:
            return f"its state {state.name!r} is read elsewhere too"
    units, features = lstm.operand(1).shape[0], x.shape[-1]
    time = _time_axis(lstm)
    if y.shape[-1] != units or y.shape[time] != x.shape[time] or y.shape[1 - time] != x.shape[1 - time]:
        return "its output shape is not [batch, steps, units]"
    if any(lstm.operand(i).shape != (units, features) for i in INPUT_WEIGHTS):
        return "its input weights are not [units, features]"
    if any(lstm.operand(i).shape != (units, units) for i in RECURRENT_WEIGHTS):
        return "its recurrent weights are not [units, units]"
    if any(lstm.operand(i).shape != (units,) for i in BIASES):
        return "its biases are not [units]"
    if not shapes_hold(lstm):
        return "its recorded shapes are not what its inputs make (as read)"
    return None


def _time_axis(lstm: Op) -> int:
    return 0 if getattr(lstm.options, "timeMajor", False) else 1


def _clip(lstm: Op) -> float:
    return float(getattr(lstm.options, "cellClip", 0.0) or 0.0)


def _stacked(lstm: Op, indexes) -> np.ndarray:
    return np.concatenate([lstm.operand(i).const_data for i in indexes], axis=0).astype(np.float32)


def _unroll(graph: Graph, lstm: Op, x: Tensor, y: Tensor) -> list[Op]:
    time = _time_axis(lstm)
    steps, batch, units = y.shape[time], y.shape[1 - time], y.shape[-1]
    name = y.name
    made: list[Op] = []
    anchor = lstm

    def add(kind, inputs, shape, options=None, suffix="", outputs=1):
        nonlocal anchor
        outs = [graph.add_tensor(f"{name}/unrolled/{suffix}", "FLOAT32", shape) for _ in range(outputs)]
        op = graph.add_op(kind, inputs, outs, options, after=anchor)
        anchor = op
        made.append(op)
        return outs if outputs > 1 else outs[0]

    def const(values, suffix, dtype="FLOAT32"):
        return graph.add_const(graph.unique_name(f"{name}/unrolled/{suffix}"), values, dtype)

    w_x, w_h, bias = const(_stacked(lstm, INPUT_WEIGHTS), "wx"), const(_stacked(lstm, RECURRENT_WEIGHTS), "wh"), None
    bias = const(_stacked(lstm, BIASES), "bias")
    fc = Options("FullyConnectedOptions", fusedActivationFunction=NONE, keepNumDims=False)
    unpack = Options("UnpackOptions", num=steps, axis=time)
    inputs = add("UNPACK", [x], (batch, x.shape[-1]), unpack, "x", outputs=steps)
    inputs = inputs if steps > 1 else [inputs]
    split_axis = const(np.array([1], np.int32), "split_axis", "INT32")
    clip = _clip(lstm)
    bounds = (const(np.array(-clip, np.float32), "clip_low"), const(np.array(clip, np.float32), "clip_high"))
    h = c = None
    outputs = []
    for t, x_t in enumerate(inputs):
        shape = (batch, units)
        z = add("FULLY_CONNECTED", [x_t, w_x, bias], (batch, 4 * units), fc, f"x{t}_proj")
        if h is not None:
            recurrent = add("FULLY_CONNECTED", [h, w_h, None], (batch, 4 * units), fc, f"h{t}_proj")
            z = add("ADD", [z, recurrent], (batch, 4 * units), _plain("AddOptions"), f"z{t}")
        gates = add("SPLIT", [split_axis, z], shape, Options("SplitOptions", numSplits=4), f"gates{t}", outputs=4)
        i, f, g, o = (
            add("LOGISTIC", [gates[0]], shape, None, f"i{t}"),
            add("LOGISTIC", [gates[1]], shape, None, f"f{t}"),
            add("TANH", [gates[2]], shape, None, f"g{t}"),
            add("LOGISTIC", [gates[3]], shape, None, f"o{t}"),
        )
        ig = add("MUL", [i, g], shape, _plain("MulOptions"), f"ig{t}")
        if c is None:
            c = ig
        else:
            kept = add("MUL", [f, c], shape, _plain("MulOptions"), f"fc{t}")
            c = add("ADD", [kept, ig], shape, _plain("AddOptions"), f"c{t}")
        if clip:
            low = add("MAXIMUM", [c, bounds[0]], shape, None, f"c{t}_low")
            c = add("MINIMUM", [low, bounds[1]], shape, None, f"c{t}_clipped")
        h = add("MUL", [o, add("TANH", [c], shape, None, f"tanh_c{t}")], shape, _plain("MulOptions"), f"h{t}")
        outputs.append(h)
    if steps == 1:
        made.append(
            graph.add_op(
                "RESHAPE",
                [outputs[0], const(np.array(y.shape, np.int32), "shape", "INT32")],
                [y],
                Options("ReshapeOptions", newShape=np.array(y.shape, np.int32)),
                after=anchor,
            )
        )
    else:
        made.append(
            graph.add_op("PACK", outputs, [y], Options("PackOptions", valuesCount=steps, axis=time), after=anchor)
        )
    return made


def _plain(table: str) -> Options:
    return Options(table, fusedActivationFunction=NONE)
