"""Make the tf_keras fixtures in tests/data/zoo (tfkeras_*): Keras 2 LSTMs converted by the TFLite
converter, which writes each as one UNIDIRECTIONAL_SEQUENCE_LSTM (cell_clip 10, zero variable
states; Keras 3's LSTM is not fused by the converter: it becomes a WHILE loop, hence tf_keras),
and a conv net whose batch is left dynamic (the converter writes shape signatures of -1).

Run with a Python that has tensorflow-cpu and tf_keras (not bnfold's own environment):
    python -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu tf_keras
    /tmp/tf/bin/python scripts/tfkeras_fixtures.py tests/data/zoo
Beside each NAME.tflite: NAME.input.npy (one fixed input) and NAME.ref.npy (the converted model's
output on it in TensorFlow's TFLite interpreter, on a fresh interpreter: LiteRT keeps an LSTM's
state from one invocation to the next, so only a first invocation is the Keras layer's function;
the script also checks it against Keras itself).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # Keras 2: its LSTM is what the converter fuses
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def models():
    layers = tf.keras.layers
    yield (
        "tfkeras_lstm_seq",
        tf.keras.Sequential(
            [tf.keras.Input((7, 5), batch_size=1), layers.LSTM(6, return_sequences=True), layers.Dense(3)]
        ),
    )
    yield (
        "tfkeras_lstm_last",
        tf.keras.Sequential([tf.keras.Input((7, 5), batch_size=1), layers.LSTM(6), layers.Dense(3)]),
    )
    yield (
        "tfkeras_lstm_stacked",
        tf.keras.Sequential(
            [tf.keras.Input((4, 3), batch_size=2), layers.LSTM(8, return_sequences=True), layers.LSTM(5)]
        ),
    )
    net = tf.keras.Sequential(
        [
            tf.keras.Input((9, 7, 3)),  # no batch size: the converter writes batch -1
            layers.Conv2D(4, 3),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.DepthwiseConv2D(3, padding="same"),
            layers.GlobalAveragePooling2D(),
            layers.Dense(5),
        ]
    )
    rng = np.random.default_rng(7)  # statistics a trained net has, not the identity
    net.layers[1].set_weights(
        [rng.uniform(0.5, 1.5, 4), rng.normal(0, 0.5, 4), rng.normal(0, 0.5, 4), rng.uniform(0.5, 2, 4)]
    )
    yield "tfkeras_dynamic_batch_conv", net


def main(out: Path) -> None:
    tf.keras.utils.set_random_seed(5)
    rng = np.random.default_rng(46)
    for name, model in models():
        data = tf.lite.TFLiteConverter.from_keras_model(model).convert()
        shape = [1 if d is None else d for d in model.input_shape]  # a dynamic batch: 1
        x = rng.normal(0.0, 2.0, shape).astype(np.float32)
        interp = tf.lite.Interpreter(model_content=data)
        interp.allocate_tensors()
        interp.set_tensor(interp.get_input_details()[0]["index"], x)
        interp.invoke()
        ref = interp.get_tensor(interp.get_output_details()[0]["index"])
        keras = model(x).numpy()
        assert np.allclose(ref, keras, rtol=1e-5, atol=1e-5), (name, float(np.abs(ref - keras).max()))
        (out / f"{name}.tflite").write_bytes(data)
        np.save(out / f"{name}.input.npy", x)
        np.save(out / f"{name}.ref.npy", ref)
        print(name, len(data), "bytes; Keras agrees within", float(np.abs(ref - keras).max()))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
