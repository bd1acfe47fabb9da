"""Make keras' ResNet50V2 as a float32 TFLite model with realistic batch-norm values.

What it writes, for an output path NAME.tflite:
  NAME.tflite      ResNet50V2 (224x224x3 input, 1000 classes) converted by
                   tf.lite.TFLiteConverter.from_keras_model, float32, no
                   quantization or other optimizations.
  NAME.input.npy   one input, float32 [1,224,224,3], seeded normal(0, 1).
  NAME.ref.npy     the keras model's output on that input (float32 [1,1000]).

No pretrained weights are fetched (weights=None). Convolution/dense weights keep
keras' seeded initialisation; every BatchNormalization layer then gets seeded
random values so that no fold is a no-op:
  gamma ~ uniform(0.5, 1.5)  (strictly positive by default)
  beta ~ normal(0, 0.1), moving_mean ~ normal(0, 0.1),
  moving_variance ~ uniform(0.5, 1.5)
With --mixed-gamma about 5% of each layer's gammas are set to exactly 0 and
about 5% are made negative, to exercise sign and zero handling.

This is a measurement aid, not part of the project: it needs tensorflow
(e.g. `pip install tensorflow-cpu`, in a separate venv), which bnfold does not
depend on.

Usage:
  python scripts/make_resnet50v2.py [OUT.tflite] [--seed N] [--mixed-gamma]
"""

import argparse
import os
import time

import numpy as np


def randomize_batchnorm(model, rng, mixed_gamma):
    import keras

    n = 0
    for layer in model.layers:
        if not isinstance(layer, keras.layers.BatchNormalization):
            continue
        c = layer.moving_mean.shape[-1]
        gamma = rng.uniform(0.5, 1.5, c)
        if mixed_gamma:
            u = rng.uniform(0.0, 1.0, c)
            gamma[u < 0.05] = 0.0
            gamma[(u >= 0.05) & (u < 0.10)] *= -1.0
        if layer.gamma is not None:
            layer.gamma.assign(gamma.astype(np.float32))
        if layer.beta is not None:
            layer.beta.assign(rng.normal(0.0, 0.1, c).astype(np.float32))
        layer.moving_mean.assign(rng.normal(0.0, 0.1, c).astype(np.float32))
        layer.moving_variance.assign(rng.uniform(0.5, 1.5, c).astype(np.float32))
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default="resnet50v2.tflite")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--mixed-gamma", action="store_true", help="put ~5%% zero and ~5%% negative gammas in each BN layer"
    )
    args = ap.parse_args()

    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = tf.keras.applications.ResNet50V2(weights=None, input_shape=(224, 224, 3), classes=1000)
    n_bn = randomize_batchnorm(model, rng, args.mixed_gamma)

    x = rng.normal(0.0, 1.0, (1, 224, 224, 3)).astype(np.float32)
    ref = np.asarray(model(x, training=False)).astype(np.float32)

    t0 = time.perf_counter()
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    tflite = converter.convert()
    dt = time.perf_counter() - t0

    base = args.out[: -len(".tflite")] if args.out.endswith(".tflite") else args.out
    with open(args.out, "wb") as f:
        f.write(tflite)
    np.save(base + ".input.npy", x)
    np.save(base + ".ref.npy", ref)
    print(f"{args.out}: {os.path.getsize(args.out)} bytes, {n_bn} BN layers randomized, converted in {dt:.1f} s")


if __name__ == "__main__":
    main()
