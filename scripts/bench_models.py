"""Models for scripts/bench.py, built with bnfold's own IR and writer (no TensorFlow needed).

- `resnet_post`: a ResNet50 (v1) shaped network, float32, ~100 MB. Every convolution is followed
  by an unfolded batch norm, CONV_2D -> MUL([1,1,1,C]) -> ADD([1,1,1,C]) (RELU fused in the ADD
  where the network has one): the post-conv pattern fuse_batchnorm_with_conv folds.
- `resnet_pre`: a ResNet50V2 shaped network, float32, ~100 MB: pre-activation blocks
  (residual ADD -> MUL -> ADD(RELU) -> CONV_2D, the pattern fuse_preactivation_batchnorm folds)
  with post-conv MUL+ADD chains inside each bottleneck.
- `ops_model(blocks)`: the op-heavy series: `blocks` x (1x1 CONV_2D -> MUL -> ADD) on a tiny
  [1,2,2,8] tensor, so the cost is per operator, not per byte (3 operators and 6 constants a
  block; every block is one fold).
- `scale_model(nbytes)`: the synthetic scale series: a few 1x1 CONV_2D layers on a 1x1 image,
  each followed by MUL+ADD, with big weights. Layers use one shared deterministic weight array
  (cheap to make, so building a 3 GB model needs ~270 MB of memory, not 3 GB); each layer still
  gets its own Buffer in the file. The 3 GB model is written in the offset-buffer layout.

Weights are drawn so activations stay O(1) through the whole network (He-like scaling, batch norm
scales around 1), which keeps the optimized-vs-original comparison meaningful.
"""

from __future__ import annotations

import numpy as np

from bnfold.io.atomic import save_model
from bnfold.io.formats import TFLITE
from bnfold.ir.graph import Graph, Options
from bnfold.ir.model import Model

RELU, NONE = 1, 0
SAME, VALID = 0, 1
MB = 1 << 20


class Net:
    """A tiny builder over bnfold's IR: one graph, float32 NHWC tensors, seeded weights."""

    def __init__(self, name: str, seed: int = 0):
        self.model = Model(TFLITE, version=3, description=f"bnfold bench: {name}".encode())
        self.graph = self.model.add_graph(Graph("main"))
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def _name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def input(self, shape) -> object:
        t = self.graph.add_tensor("input", "FLOAT32", shape)
        self.graph.inputs = [t]
        return t

    def const(self, base: str, array: np.ndarray):
        return self.graph.add_const(self._name(base), np.asarray(array, dtype=np.float32))

    def op(self, kind: str, inputs, shape, options: Options | None = None, base: str | None = None):
        out = self.graph.add_tensor(self._name(base or kind.lower()), "FLOAT32", shape)
        self.graph.add_op(kind, inputs, [out], options)
        return out

    def conv(self, x, cout: int, k: int, stride: int = 1, weights: np.ndarray | None = None, act: int = NONE):
        n, h, w, cin = x.shape
        if weights is None:
            weights = self.rng.normal(0.0, np.sqrt(2.0 / (k * k * cin)), (cout, k, k, cin))
        filt = self.const("filter", weights)
        bias = self.const("bias", np.zeros(cout))
        shape = (n, -(-h // stride), -(-w // stride), cout)
        options = Options(
            "Conv2DOptions",
            padding=SAME,
            strideW=stride,
            strideH=stride,
            fusedActivationFunction=act,
            dilationWFactor=1,
            dilationHFactor=1,
        )
        return self.op("CONV_2D", [x, filt, bias], shape, options, base="conv")

    def batchnorm(self, x, act: int = NONE, gamma_low: float = 0.5):
        """Unfolded inference batch norm: x * scale + shift, as MUL then ADD with [1,1,1,C] consts."""
        c = x.shape[-1]
        gamma = self.rng.uniform(gamma_low, 1.5, c)
        var = self.rng.uniform(0.5, 1.5, c)
        mean, beta = self.rng.normal(0.0, 0.1, c), self.rng.normal(0.0, 0.1, c)
        scale = gamma / np.sqrt(var + 1e-3)
        shift = beta - mean * scale
        y = self.op(
            "MUL",
            [x, self.const("bn_scale", scale.reshape(1, 1, 1, c))],
            x.shape,
            Options("MulOptions", fusedActivationFunction=NONE),
            base="bn_mul",
        )
        return self.op(
            "ADD",
            [y, self.const("bn_shift", shift.reshape(1, 1, 1, c))],
            x.shape,
            Options("AddOptions", fusedActivationFunction=act),
            base="bn_add",
        )

    def add(self, a, b, act: int = NONE):
        return self.op("ADD", [a, b], a.shape, Options("AddOptions", fusedActivationFunction=act), base="residual")

    def max_pool(self, x, k: int = 3, stride: int = 2):
        n, h, w, c = x.shape
        options = Options(
            "Pool2DOptions",
            padding=SAME,
            strideW=stride,
            strideH=stride,
            filterWidth=k,
            filterHeight=k,
            fusedActivationFunction=NONE,
        )
        return self.op("MAX_POOL_2D", [x], (n, -(-h // stride), -(-w // stride), c), options, base="pool")

    def head(self, x, classes: int = 1000):
        n, _, _, c = x.shape
        axes = self.graph.add_const(self._name("axes"), np.array([1, 2], dtype=np.int32), "INT32")
        pooled = self.op("MEAN", [x, axes], (n, c), Options("ReducerOptions", keepDims=False), base="gap")
        w = self.const("fc_weights", self.rng.normal(0.0, np.sqrt(1.0 / c), (classes, c)))
        b = self.const("fc_bias", np.zeros(classes))
        options = Options("FullyConnectedOptions", fusedActivationFunction=NONE, weightsFormat=0, keepNumDims=False)
        return self.op("FULLY_CONNECTED", [pooled, w, b], (n, classes), options, base="logits")

    def finish(self, out) -> Model:
        self.graph.outputs = [out]
        return self.model


STAGES = ((64, 3), (128, 4), (256, 6), (512, 3))  # ResNet50: bottleneck width, blocks


def resnet_post(size: int = 192) -> Model:
    """ResNet50 v1: conv -> MUL -> ADD(RELU) everywhere, residual ADD(RELU)."""
    net = Net("resnet_post (ResNet50 v1 shape, post-conv batch norms)", seed=1)
    x = net.input((1, size, size, 3))
    x = net.batchnorm(net.conv(x, 64, 7, 2), RELU)
    x = net.max_pool(x)
    for stage, (width, blocks) in enumerate(STAGES):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 0 else 1
            shortcut = x
            if b == 0:
                shortcut = net.batchnorm(net.conv(x, 4 * width, 1, stride))
            y = net.batchnorm(net.conv(x, width, 1), RELU)
            y = net.batchnorm(net.conv(y, width, 3, stride), RELU)
            y = net.batchnorm(net.conv(y, 4 * width, 1))
            x = net.add(shortcut, y, RELU)
    return net.finish(net.head(x))


def resnet_pre(size: int = 192) -> Model:
    """ResNet50V2: residual ADD -> MUL -> ADD(RELU) -> CONV_2D (pre-activation), with
    conv -> MUL -> ADD(RELU) inside each bottleneck; final post-norm before the head."""
    net = Net("resnet_pre (ResNet50V2 shape, pre-activation batch norms)", seed=2)
    x = net.input((1, size, size, 3))
    x = net.conv(x, 64, 7, 2)
    x = net.max_pool(x)
    for stage, (width, blocks) in enumerate(STAGES):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 0 else 1
            pre = net.batchnorm(x, RELU)
            shortcut = net.conv(pre, 4 * width, 1, stride) if b == 0 else x
            y = net.batchnorm(net.conv(pre, width, 1), RELU)
            y = net.batchnorm(net.conv(y, width, 3, stride), RELU)
            y = net.conv(y, 4 * width, 1)
            x = net.add(shortcut, y)
    x = net.batchnorm(x, RELU)
    return net.finish(net.head(x))


def scale_layers(nbytes: int) -> tuple[int, int]:
    """(layers, channels) for a scale-series model of about `nbytes` of weights: 4 layers up to
    1 GB (so op count stays fixed across 10 MB..1 GB and only the bytes grow), then 8192-channel
    layers (256 MiB each) beyond, so no single tensor nears 2 GB."""
    per_layer = nbytes / 4
    channels = int(np.sqrt(per_layer / 4))
    if channels <= 8192:
        return 4, max(16, channels // 16 * 16)
    return int(round(nbytes / (8192 * 8192 * 4))), 8192


def _fill(channels: int) -> np.ndarray:
    """Deterministic weights without a random generator: a hashed index pattern scaled to
    variance 1/channels (uniform in +-sqrt(3/C)), built in float32 in place."""
    n = channels * channels
    w = np.arange(n, dtype=np.uint32)
    w *= np.uint32(2654435761)  # Knuth multiplicative hash, wraps mod 2**32
    w >>= np.uint32(8)
    out = w.view(np.float32)  # reuse the memory: write the scaled values over the integers
    np.multiply(w, np.float32(2.0 * np.sqrt(3.0 / channels) / (1 << 24)), out=out, casting="unsafe")
    out -= np.float32(np.sqrt(3.0 / channels))
    return out.reshape(channels, 1, 1, channels)


def scale_model(nbytes: int) -> Model:
    """Synthetic series model: `layers` x (1x1 CONV_2D -> MUL -> ADD) on a [1,1,1,C] input."""
    layers, channels = scale_layers(nbytes)
    net = Net(f"scale series {nbytes // MB} MB", seed=3)
    weights = _fill(channels)
    x = net.input((1, 1, 1, channels))
    for _ in range(layers):
        x = net.batchnorm(net.conv(x, channels, 1, weights=weights), RELU, gamma_low=0.9)
    return net.finish(x)


def ops_model(blocks: int, channels: int = 8) -> Model:
    """Op-heavy series model: `blocks` x (1x1 CONV_2D -> MUL -> ADD) on a [1,2,2,C] input."""
    net = Net(f"op series {blocks} blocks", seed=5)
    x = net.input((1, 2, 2, channels))
    for _ in range(blocks):
        x = net.batchnorm(net.conv(x, channels, 1), NONE, gamma_low=0.9)
    return net.finish(x)


def build(kind: str, path: str, *, nbytes: int = 0, external: bool = False, size: int = 192, blocks: int = 0) -> int:
    """Build one bench model into `path`; returns the file size."""
    if kind == "ops":
        return save_model(ops_model(blocks), path, TFLITE).size
    if kind == "resnet_post":
        model = resnet_post(size)
    elif kind == "resnet_pre":
        model = resnet_pre(size)
    elif kind == "scale":
        model = scale_model(nbytes)
    else:
        raise ValueError(kind)
    return save_model(model, path, TFLITE, external=external).size
