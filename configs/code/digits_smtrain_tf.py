"""Train a small MLP on the digits that `python -m smtrain.local.demo_data` writes (x: 8x8 images, y: labels).

digits_keras.py is plain Keras (configs/own-script-wrapped.yaml runs it unchanged); digits_smtrain_tf.py
is the same script with five lines changed to use smtrain_tf (configs/own-script-helper.yaml).
"""

import argparse
import os

import numpy as np
import smtrain_tf
import tensorflow as tf


def load(channel):
    data = np.load(os.path.join(channel, "digits.npz"))
    return data["x"].reshape(len(data["x"]), -1), data["y"]


def build_model(learning_rate):
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.001)
    parser.add_argument("--model_dir")  # SageMaker passes it to every TensorFlow script
    args = parser.parse_args()

    x, y = load(os.environ["SM_CHANNEL_TRAIN"])
    x_val, y_val = load(os.environ["SM_CHANNEL_VALIDATION"])
    with smtrain_tf.strategy().scope():
        model = build_model(args.learning_rate)
    smtrain_tf.fit(model, (x, y), (x_val, y_val), epochs=args.epochs, batch_size_per_replica=args.batch_size)
    smtrain_tf.save(model)


if __name__ == "__main__":
    main()
