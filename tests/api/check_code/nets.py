"""Model hooks (training.model: nets:<name>) for tests/api/test_check.py: an MLP with BatchNormalization, per
replica or synchronized, or with Dropout (seeded or not)."""
import tensorflow as tf


def _mlp(middle, input_shape):
    return tf.keras.Sequential([tf.keras.Input(shape=input_shape), tf.keras.layers.Flatten(),
                                tf.keras.layers.Dense(64), *middle, tf.keras.layers.Activation("relu"),
                                tf.keras.layers.Dense(10, activation="softmax")])


def batch_norm(input_shape, **_):
    return _mlp([tf.keras.layers.BatchNormalization()], input_shape)


def sync_batch_norm(input_shape, **_):
    return _mlp([tf.keras.layers.BatchNormalization(synchronized=True)], input_shape)


def seeded_dropout(input_shape, **_):
    return _mlp([tf.keras.layers.Dropout(0.3, seed=1)], input_shape)
