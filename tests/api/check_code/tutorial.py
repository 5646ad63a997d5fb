"""A tutorial-style Keras script, as users write it: its own MirroredStrategy, a global batch made with
num_replicas_in_sync, a tf.data pipeline, argparse with dashes, fit with the default progress bar.

Its flags plant the mistakes `smtrain check` must find (tests/api/test_check.py):
    --shuffle-seed -1     shuffle without a seed before the data is split between workers
    --scale-lr 1          scale the learning rate by the replicas itself (on top of lr_scaling)
    --per-replica-batch 1 batch the dataset with the per-replica number, forgetting num_replicas_in_sync
    --evaluate-wrong 1    unpack evaluate's two values into three after training (fails after fit, anywhere)
    --seed-per-host 1     seed TensorFlow with its host's index (each worker then shuffles its own way)
and its other flags what a correct script may do: --global-seed N seeds everything itself (then an unseeded
shuffle is the same on every worker), --validate 1 passes validation data (batched by the script too).
"""
import argparse
import json
import os

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--learning-rate", type=float, default=0.001)
parser.add_argument("--shuffle-seed", type=int, default=5)
parser.add_argument("--scale-lr", type=int, default=0)
parser.add_argument("--per-replica-batch", type=int, default=0)
parser.add_argument("--global-seed", type=int, default=-1)
parser.add_argument("--validate", type=int, default=0)
parser.add_argument("--evaluate-wrong", type=int, default=0)
parser.add_argument("--seed-per-host", type=int, default=0)
parser.add_argument("--model_dir")
args = parser.parse_args()

if args.global_seed >= 0:
    tf.keras.utils.set_random_seed(args.global_seed)
if args.seed_per_host:
    hosts = json.loads(os.environ["SM_HOSTS"])
    tf.random.set_seed(hosts.index(os.environ["SM_CURRENT_HOST"]))
strategy = tf.distribute.MirroredStrategy()
data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "digits.npz"))
x, y = data["x"].reshape(len(data["x"]), -1).astype("float32"), data["y"]
batch = args.batch_size if args.per_replica_batch else args.batch_size * strategy.num_replicas_in_sync
seed = None if args.shuffle_seed < 0 else args.shuffle_seed
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=seed).batch(batch)
rate = args.learning_rate * strategy.num_replicas_in_sync if args.scale_lr else args.learning_rate
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=tf.keras.optimizers.Adam(rate), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
validation = None
if args.validate:
    held_out = np.load(os.path.join(os.environ["SM_CHANNEL_VALIDATION"], "digits.npz"))
    validation = tf.data.Dataset.from_tensor_slices(
        (held_out["x"].reshape(len(held_out["x"]), -1).astype("float32"), held_out["y"])).batch(16)
model.fit(dataset, epochs=args.epochs, validation_data=validation)
if args.evaluate_wrong:
    loss, accuracy, top5 = model.evaluate(dataset, verbose=0)
model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))
