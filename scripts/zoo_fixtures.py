"""Small real-exporter fixtures for tests/data/zoo (needs the `zoo` extra; not run by CI).

Each fixture is a tiny network (a few channels, every dimension a different size, random
weights, non-trivial batch-norm statistics, eval mode) exported by a real converter: the
TFLite converter for keras, TICO for PyTorch -> Circle, litert-torch for PyTorch -> TFLite,
onnx2tf for ONNX -> TFLite. Beside each model NAME it writes NAME.input.npy (one fixed input in
the model's own layout) and NAME.ref.npy (the original model's output in LiteRT on that input).

    python scripts/zoo_fixtures.py OUT_DIR [NAME ...]

Fixtures whose exporter is not importable are skipped with a message, so the keras ones and the
PyTorch ones can be made from different virtual environments.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

SEED = 0
WORK = Path(os.environ.get("BNFOLD_ZOO_WORK", Path.home() / ".cache" / "bnfold-zoo" / "fixtures"))
FIXTURES: dict[str, tuple[str, object]] = {}  # name -> (exporter module, builder)


def fixture(name: str, needs: str):
    def register(fn):
        FIXTURES[name] = (needs, fn)
        return fn

    return register


# ---------------------------------------------------------------- keras (TFLite converter)


def keras_randomize_bn(model, rng: np.random.Generator, negative: bool = True) -> None:
    """Non-trivial inference statistics: gamma with some negatives, beta, mean, var."""
    import keras

    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            c = layer.gamma.shape[0] if layer.gamma is not None else layer.moving_mean.shape[0]
            weights = []
            if layer.gamma is not None:
                gamma = rng.uniform(0.5, 1.5, c) * (np.where(rng.random(c) < 0.25, -1, 1) if negative else 1)
                weights.append(gamma)
            if layer.beta is not None:
                weights.append(rng.normal(0, 0.3, c))
            weights += [rng.normal(0, 0.3, c), rng.uniform(0.5, 2.0, c)]
            layer.set_weights([w.astype(np.float32) for w in weights])


def keras_convert(model, float16: bool = False) -> bytes:
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if float16:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


@fixture("keras_concat_bn_relu", "tensorflow")
def keras_concat_bn_relu(rng):
    """NASNet/Inception cell: conv3x3 (4 ch) and conv1x1 (5 ch) -> concat(channels) -> BN -> ReLU -> conv."""
    import keras
    from keras import layers

    x = keras.Input((6, 10, 3), batch_size=1)
    a = layers.Conv2D(4, 3, padding="same")(x)
    b = layers.Conv2D(5, 1)(x)
    y = layers.Concatenate(axis=-1)([a, b])
    y = layers.BatchNormalization(epsilon=1e-3)(y)
    y = layers.ReLU()(y)
    y = layers.Conv2D(7, 3, padding="same")(y)
    model = keras.Model(x, y)
    keras_randomize_bn(model, rng)
    return keras_convert(model), ".tflite", rng.normal(0, 1, (1, 6, 10, 3))


@fixture("keras_concat_dw_bn", "tensorflow")
def keras_concat_dw_bn(rng):
    """A mix of producers: depthwise conv (3 ch) and conv (5 ch) -> concat -> BN (no ReLU), a graph output."""
    import keras
    from keras import layers

    x = keras.Input((7, 9, 3), batch_size=1)
    a = layers.DepthwiseConv2D(3, padding="same")(x)
    b = layers.Conv2D(5, 3, padding="same")(x)
    y = layers.Concatenate(axis=-1)([a, b])
    y = layers.BatchNormalization(epsilon=1e-3)(y)
    model = keras.Model(x, y)
    keras_randomize_bn(model, rng)
    return keras_convert(model), ".tflite", rng.normal(0, 1, (1, 7, 9, 3))


@fixture("keras_concat_input_bn", "tensorflow")
def keras_concat_input_bn(rng):
    """Negative: one concat operand is the graph input (no producer to fold into)."""
    import keras
    from keras import layers

    x = keras.Input((5, 6, 2), batch_size=1)
    a = layers.Conv2D(3, 3, padding="same")(x)
    y = layers.Concatenate(axis=-1)([a, x])
    y = layers.BatchNormalization(epsilon=1e-3)(y)
    y = layers.ReLU()(y)
    y = layers.Conv2D(4, 1)(y)
    model = keras.Model(x, y)
    keras_randomize_bn(model, rng)
    return keras_convert(model), ".tflite", rng.normal(0, 1, (1, 5, 6, 2))


def keras_fp16_two_readers():
    import keras
    from keras import layers

    x = keras.Input((6, 8, 3), batch_size=1)
    c = layers.Conv2D(5, 3, padding="same")(x)
    y = layers.BatchNormalization(epsilon=1e-3)(c)
    y = layers.ReLU()(y)
    y = layers.Conv2D(4, 3, padding="same")(y)
    z = layers.Conv2D(4, 1)(c)  # a second reader of the conv output keeps the BN unfolded
    return keras.Model(x, layers.Add()([y, z])), (1, 6, 8, 3)


def keras_preact():
    """ResNetV2-style: conv -> BN -> ReLU -> conv, the first conv read twice (residual)."""
    import keras
    from keras import layers

    x = keras.Input((9, 7, 3), batch_size=1)
    c = layers.Conv2D(4, 3, padding="same")(x)
    y = layers.BatchNormalization(epsilon=1.001e-5)(c)
    y = layers.ReLU()(y)
    y = layers.Conv2D(4, 3, padding="same")(y)
    y = layers.Add()([y, c])
    y = layers.BatchNormalization(epsilon=1.001e-5)(y)
    y = layers.ReLU()(y)
    y = layers.GlobalAveragePooling2D()(y)
    y = layers.Dense(6)(y)
    return keras.Model(x, y), (1, 9, 7, 3)


@fixture("keras_fp16_conv_bn_two_readers", "tensorflow")
def keras_fp16_conv_bn_two_readers(rng):
    """float16 quantization: conv whose output is read twice -> BN -> ReLU -> conv (+ 1x1 conv residual)."""
    model, shape = keras_fp16_two_readers()
    keras_randomize_bn(model, rng, negative=False)
    return keras_convert(model, float16=True), ".tflite", rng.normal(0, 1, shape)


@fixture("keras_fp16_preact", "tensorflow")
def keras_fp16_preact(rng):
    """float16 quantization: pre-activation BN -> ReLU -> conv, and BN -> ReLU -> GAP -> Dense head."""
    model, shape = keras_preact()
    keras_randomize_bn(model, rng, negative=False)
    return keras_convert(model, float16=True), ".tflite", rng.normal(0, 1, shape)


@fixture("keras_preact", "tensorflow")
def keras_preact_fp32(rng):
    """The float32 twin of keras_fp16_preact (same graph and seed)."""
    model, shape = keras_preact()
    keras_randomize_bn(model, rng, negative=False)
    return keras_convert(model), ".tflite", rng.normal(0, 1, shape)


@fixture("keras_conv1_reshape_bn", "tensorflow")
def keras_conv1_reshape_bn(rng):
    """ONE's REGRESS_ONNX_Conv_BN_001 shape: a one-channel conv, a reshape that merges the channel
    axis away, then a batch norm over that one feature (axis 1): scalar scale and shift."""
    import keras
    from keras import layers

    x = keras.Input((5, 7, 3), batch_size=1)
    y = layers.Conv2D(1, 3, padding="same")(x)
    y = layers.Reshape((1, 35))(y)
    y = layers.BatchNormalization(axis=1, epsilon=1e-3)(y)
    model = keras.Model(x, y)
    keras_randomize_bn(model, rng, negative=False)
    return keras_convert(model), ".tflite", rng.normal(0, 1, (1, 5, 7, 3))


@fixture("keras_mobilenetv3small_tiny", "tensorflow")
def keras_mobilenetv3small_tiny(rng):
    """keras.applications MobileNetV3Small, alpha 0.1, 32x32, no top: its Rescaling
    (x * 1/127.5 - 1: MUL scalar, ADD scalar) sits before a SAME stride-2 conv; hard-swish and
    squeeze-excite multiply two activations (no batch-norm candidates)."""
    import keras

    model = keras.applications.MobileNetV3Small(
        input_shape=(32, 32, 3), alpha=0.1, minimalistic=False, include_top=False, weights=None, pooling="avg"
    )
    keras_randomize_bn(model, rng, negative=False)
    return keras_convert(model), ".tflite", rng.uniform(0, 255, (1, 32, 32, 3))


# ---------------------------------------------------------------- PyTorch (TICO, litert-torch)


def torch_randomize_bn(module, rng: np.random.Generator, negative: bool = False) -> None:
    """Non-trivial running statistics and affine parameters on every BatchNorm, then eval mode."""
    import torch

    for m in module.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            c = m.num_features
            sign = np.where(rng.random(c) < 0.25, -1.0, 1.0) if negative else 1.0
            with torch.no_grad():
                m.running_mean.copy_(torch.tensor(rng.normal(0, 0.3, c), dtype=torch.float32))
                m.running_var.copy_(torch.tensor(rng.uniform(0.5, 2.0, c), dtype=torch.float32))
                if m.affine:
                    m.weight.copy_(torch.tensor(rng.uniform(0.5, 1.5, c) * sign, dtype=torch.float32))
                    m.bias.copy_(torch.tensor(rng.normal(0, 0.3, c), dtype=torch.float32))
    module.eval()


def torch_export(exporter: str, module, x: np.ndarray) -> tuple[bytes, str]:
    """`module` on an NCHW example input through TICO (.circle) or litert-torch (.tflite)."""
    import torch

    args = (torch.tensor(x, dtype=torch.float32),)
    with tempfile.TemporaryDirectory() as d:
        if exporter == "tico":
            import tico

            path = os.path.join(d, "m.circle")
            tico.convert(module, args).save(path)
        else:
            import litert_torch

            path = os.path.join(d, "m.tflite")
            litert_torch.convert(module, args).export(path)
        return Path(path).read_bytes(), Path(path).suffix


def torch_seed(rng: np.random.Generator) -> None:
    import torch

    torch.manual_seed(int(rng.integers(2**31)))


def preact_resnetv2():
    """timm-style ResNetV2 in miniature: stem conv, one pre-activation block (BN -> ReLU -> conv,
    twice, identity shortcut), then the head: BN -> ReLU -> global mean -> linear."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c, mid):
            super().__init__()
            self.norm1, self.conv1 = nn.BatchNorm2d(c), nn.Conv2d(c, mid, 3, padding=1, bias=False)
            self.norm2, self.conv2 = nn.BatchNorm2d(mid), nn.Conv2d(mid, c, 3, padding=1, bias=False)

        def forward(self, x):
            y = self.conv1(self.norm1(x).relu())
            return x + self.conv2(self.norm2(y).relu())

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.block = Block(4, 5)
            self.norm = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4, 6)

        def forward(self, x):
            y = self.norm(self.block(self.stem(x))).relu()
            return self.fc(y.mean((2, 3)))

    return Net()


def densenet_cell():
    """torchvision DenseNet in miniature: a dense layer (BN -> ReLU -> 1x1 conv -> BN -> ReLU ->
    3x3 conv) whose output is concatenated to its input on the channel axis, then the
    transition: BN -> ReLU -> 1x1 conv -> average pool."""
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.norm1, self.conv1 = nn.BatchNorm2d(4), nn.Conv2d(4, 6, 1, bias=False)
            self.norm2, self.conv2 = nn.BatchNorm2d(6), nn.Conv2d(6, 3, 3, padding=1, bias=False)
            self.norm, self.trans = nn.BatchNorm2d(7), nn.Conv2d(7, 5, 1, bias=False)

        def forward(self, x):
            x0 = self.stem(x)
            x1 = self.conv2(self.norm2(self.conv1(self.norm1(x0).relu())).relu())
            y = torch.cat([x0, x1], 1)
            return nn.functional.avg_pool2d(self.trans(self.norm(y).relu()), 2)

    return Net()


def input_norm_net(padding: int, channels: tuple[int, int] = (4, 5)):
    """Input normalization (x - mean) / std on NCHW [1,3,1,1] constants, then conv -> BN -> ReLU -> conv."""
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1))
            self.conv1 = nn.Conv2d(3, channels[0], 3, padding=padding, bias=False)
            self.bn1 = nn.BatchNorm2d(channels[0])
            self.conv2 = nn.Conv2d(channels[0], channels[1], 1)

        def forward(self, x):
            x = (x - self.mean) / self.std
            return self.conv2(self.bn1(self.conv1(x)).relu())

    return Net()


def conv1_bn_reshape():
    """ONE's REGRESS_ONNX_Conv_BN_001 shape: a one-channel conv, a reshape that merges the
    channel axis into the others, then a one-feature batch norm (scalar scale and shift)."""
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 1, 3, padding=1)
            self.bn = nn.BatchNorm1d(1)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y.reshape(1, 1, -1))

    return Net()


TORCH_NETS = {
    "preact_resnetv2": (preact_resnetv2, (1, 3, 6, 10), "pre-activation ResNetV2 block + BN->ReLU->mean->linear head"),
    "densenet_concat": (densenet_cell, (1, 3, 8, 6), "DenseNet layer + concat + BN->ReLU->1x1 conv transition"),
    "input_norm_valid": (lambda: input_norm_net(0), (1, 3, 7, 9), "(x-mean)/std -> VALID conv -> BN -> ReLU -> conv"),
    "input_norm_same": (lambda: input_norm_net(1), (1, 3, 7, 9), "(x-mean)/std -> SAME conv -> BN -> ReLU -> conv"),
}


def torch_fixture(exporter: str, net: str):
    build, shape, doc = TORCH_NETS[net]

    def make_it(rng):
        import torch

        torch_seed(rng)
        module = build()
        torch_randomize_bn(module, rng)
        x = rng.normal(0, 1, shape).astype(np.float32)
        content, suffix = torch_export(exporter, module, x)
        with torch.no_grad():
            framework = module(torch.tensor(x)).numpy()
        return content, suffix, x, framework

    make_it.__doc__ = doc
    return make_it


for _net in TORCH_NETS:
    fixture(f"tico_{_net}", "tico")(torch_fixture("tico", _net))
    fixture(f"litert_{_net}", "litert_torch")(torch_fixture("litert", _net))


# ---------------------------------------------------------------- ONNX (torch.onnx -> onnx2tf)
# Two stages, because onnx2tf wants its own TensorFlow: `onnx_*` exports the ONNX file (and the
# framework's output) into the work folder from a PyTorch environment, `onnx2tf_*` converts it.


def input_bn_strided_conv():
    """An input batch norm before a stride-2 conv with padding 1: onnx2tf makes the padding an
    explicit zero PAD before a VALID CONV_2D (input -> MUL -> ADD -> PAD -> CONV_2D)."""
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(3)
            self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)

        def forward(self, x):
            return self.conv(self.bn(x)).relu()

    return Net()


ONNX_NETS = {
    "input_bn_pad": (input_bn_strided_conv, (1, 3, 6, 9)),
    "conv1_bn_reshape": (conv1_bn_reshape, (1, 3, 5, 7)),
}


def onnx_export(net: str, work: Path):
    def make_it(rng):
        import torch

        build, shape = ONNX_NETS[net]
        torch_seed(rng)
        module = build()
        torch_randomize_bn(module, rng)
        x = rng.normal(0, 1, shape).astype(np.float32)
        torch.onnx.export(module, (torch.tensor(x),), str(work / f"{net}.onnx"), dynamo=False, opset_version=17)
        with torch.no_grad():
            np.save(work / f"{net}.framework.npy", module(torch.tensor(x)).numpy())
        np.save(work / f"{net}.input.npy", x)
        return None

    return make_it


def onnx2tf_convert(net: str, work: Path, precision: str = "float32"):
    def make_it(rng):
        import subprocess

        onnx = work / f"{net}.onnx"
        if not onnx.exists():
            raise SystemExit(f"{onnx}: missing; make onnx_{net} first (in an environment with torch)")
        # onnx2tf checks 3-channel image models on sample images it would download: give it local ones
        sample = work / "calibration_image_sample_data_20x128x128x3_float32.npy"
        if not sample.exists():
            np.save(sample, np.random.default_rng(0).random((20, 128, 128, 3), dtype=np.float32))
        out = work / f"{net}.onnx2tf"
        subprocess.run(
            [sys.executable, "-m", "onnx2tf", "-i", str(onnx), "-o", str(out), "-n"],
            cwd=work,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        x = np.load(work / f"{net}.input.npy").transpose(0, 2, 3, 1)  # onnx2tf makes the input NHWC
        framework = np.load(work / f"{net}.framework.npy")
        if framework.ndim == 4:  # and its 4-d outputs NHWC
            framework = framework.transpose(0, 2, 3, 1)
        return (out / f"{net}_{precision}.tflite").read_bytes(), ".tflite", x, framework

    return make_it


for _net in ONNX_NETS:
    fixture(f"onnx_{_net}", "onnx")(onnx_export(_net, WORK))
    fixture(f"onnx2tf_{_net}", "onnx2tf")(onnx2tf_convert(_net, WORK))
fixture("onnx2tf_fp16_input_bn_pad", "onnx2tf")(onnx2tf_convert("input_bn_pad", WORK, "float16"))


# ---------------------------------------------------------------- main


def litert_output(content: bytes, suffix: str, x: np.ndarray) -> np.ndarray:
    """The original model's output in LiteRT (bnfold's loader, so Circle files run too)."""
    from bnfold.api import load
    from bnfold.values.litert import run

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m" + suffix)
        Path(path).write_bytes(content)
        model = load(path)
    return run(model, [x])[0]


def make(name: str, out: Path) -> None:
    needs, build = FIXTURES[name]
    if needs == "onnx" and importlib.util.find_spec("torch") is None:
        needs = "torch"
    if importlib.util.find_spec(needs) is None:
        print(f"{name}: skipped ({needs} not installed)")
        return
    rng = np.random.default_rng(SEED)
    made = build(rng)
    if made is None:  # an intermediate file only
        print(f"{name}: exported")
        return
    content, suffix, x, *framework = made
    x = np.asarray(x, dtype=np.float32)
    ref = litert_output(content, suffix, x)
    if framework:  # the exporter kept the function: LiteRT agrees with the framework
        err = float(np.max(np.abs(ref - framework[0].reshape(ref.shape))))
        tolerance = 1e-2 if "fp16" in name else 1e-4  # float16 weights round once on the way
        assert err < tolerance * (1 + float(np.max(np.abs(ref)))), f"{name}: LiteRT differs from the framework by {err}"

    (out / (name + suffix)).write_bytes(content)
    np.save(out / f"{name}.input.npy", x)
    np.save(out / f"{name}.ref.npy", ref)
    print(f"{name}{suffix}: {len(content)} bytes, input {x.shape}, output {ref.shape}")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    for name in argv[1:] or list(FIXTURES):
        make(name, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
