"""An smtrain_tf script that builds its model before asking for the strategy: fine on one device, refused by
smtrain_tf.fit under several (the variables are not the strategy's)."""
import os

import numpy as np
import smtrain_tf
import tensorflow as tf

data = np.load(os.path.join(smtrain_tf.channel("train"), "digits.npz"))
x, y = data["x"].reshape(len(data["x"]), -1).astype("float32"), data["y"]
model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(32, activation="relu"),
                             tf.keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
smtrain_tf.strategy()
smtrain_tf.fit(model, (x, y), epochs=1, batch_size_per_replica=32)
