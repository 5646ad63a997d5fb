"""A model with two named inputs through the bundled entrypoint (configs/two-input.yaml).

It reads the digits `python -m smtrain.local.demo_data DIR` writes and gives the model two views of
each image: its 64 pixels, and the ink in each of its 8 rows.
"""

import os

import numpy as np
import tensorflow as tf


def load_data(channels):
    """({"pixels": (64,), "rows": (8,)}, label) examples, unbatched."""
    def read(channel):
        data = np.load(os.path.join(channel, "digits.npz"))
        images = data["x"].astype("float32")
        features = {"pixels": images.reshape(len(images), 64), "rows": images.sum(axis=2) / 8.0}
        return tf.data.Dataset.from_tensor_slices((features, data["y"]))

    return {"train": read(channels["train"]), "validation": read(channels["validation"])}


def build_model(hyperparameters):
    pixels = tf.keras.Input(shape=(64,), name="pixels")
    rows = tf.keras.Input(shape=(8,), name="rows")
    x = tf.keras.layers.Concatenate()([pixels, rows])
    x = tf.keras.layers.Dense(64, activation="relu")(x)
    outputs = tf.keras.layers.Dense(10, activation="softmax", name="digit")(x)
    model = tf.keras.Model({"pixels": pixels, "rows": rows}, outputs)
    model.compile(optimizer=tf.keras.optimizers.Adam(float(hyperparameters.get("lr", 0.003))),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy", tf.keras.metrics.SparseTopKCategoricalAccuracy(k=3, name="top3")])
    return model
