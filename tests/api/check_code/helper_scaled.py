"""An smtrain_tf script that scales its rate with smtrain_tf's helper and batches its own dataset with a global
batch made of num_replicas_in_sync, as tutorials do."""
import os

import numpy as np
import smtrain_tf
import tensorflow as tf

data = np.load(os.path.join(smtrain_tf.channel("train"), "digits.npz"))
x, y = data["x"].reshape(len(data["x"]), -1).astype("float32"), data["y"]
strategy = smtrain_tf.strategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(32, activation="relu"),
                                 tf.keras.layers.Dense(10, activation="softmax")])
    rate = smtrain_tf.scaled_learning_rate(0.001, "linear")
    model.compile(optimizer=tf.keras.optimizers.Adam(rate), loss="sparse_categorical_crossentropy")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=3)
smtrain_tf.fit(model, dataset.batch(32 * strategy.num_replicas_in_sync), epochs=1)
