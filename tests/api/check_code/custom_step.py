"""A script in the form of keras.io's "Customizing what happens in fit()" guide (Keras 3): a subclassed
functional model whose own train_step takes the loss from self.compute_loss, adds a penalty of its own,
applies the gradients and updates its metrics, then fit with the default progress bar.

    --penalty unscaled  the penalty added by hand (ops.mean): on several replicas it weighs N times more
    --penalty scaled    the same penalty divided by num_replicas_in_sync, as Keras scales compute_loss
    --penalty none      no penalty
    --fail 1            the step raises on its first line
"""
import argparse
import os

import keras
import numpy as np
import tensorflow as tf
from keras import ops

parser = argparse.ArgumentParser()
parser.add_argument("--penalty", default="none")
parser.add_argument("--fail", type=int, default=0)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--model_dir")
args, _ = parser.parse_known_args()


class PenalizedModel(keras.Model):
    def train_step(self, data):
        if args.fail:
            raise RuntimeError("this step is not written yet")
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            if args.penalty == "unscaled":
                loss = loss + 0.5 * ops.mean(ops.square(y_pred))
            elif args.penalty == "scaled":
                replicas = tf.distribute.get_strategy().num_replicas_in_sync
                loss = loss + 0.5 * ops.mean(ops.square(y_pred)) / replicas
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "digits.npz"))
x = data["x"].reshape(len(data["x"]), -1).astype("float32")
y = keras.utils.to_categorical(data["y"], 10)
inputs = keras.Input(shape=(64,))
hidden = keras.layers.Dense(32, activation="relu")(inputs)
outputs = keras.layers.Dense(10)(hidden)
model = PenalizedModel(inputs, outputs)
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
model.fit(x, y, epochs=args.epochs, batch_size=32)
