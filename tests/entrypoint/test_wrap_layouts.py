"""Keras's own fit across layouts: the same global batches give the same weights on one device, two replicas
and two hosts, tuned (several steps per call, keras_repairs.py where Keras 3 fails with several replicas).

One script trains two models, each in a form public scripts have: a Sequential classifier with a
`tf.nn` activation, and a Model subclass with its own `train_step` (keras.io's "customizing what
happens in fit" form) fit on `x` alone, as autoencoders and VAEs are. Both see the data in order
(shuffle=False), so the default strategy with a batch of 64 and two replicas of 32 take the same
global batches. 1,216 rows make 19 whole batches of 64; with 8 steps per call (SMTRAIN_STEPS_PER_EXECUTION)
and 19 prime, the calls run 8, 8 and 3 steps: Keras's last call of the epoch ends early with the data.
Whole batches: tf.distribute splits a partial batch by the per-replica size (the first replicas take a
whole share), which weighs its rows otherwise than one device does (seen: up to 1e-3 apart after 2 epochs).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from .sagemaker_env import Host
from .test_wrap import TIMEOUT, _assert_ok, _code_dir, _mwms_pair, _wrapped

slow = pytest.mark.slow  # starts processes that train for real

SCRIPT = """
import argparse
import os

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--model_dir")
args = parser.parse_args()

tf.keras.utils.set_random_seed(11)
data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "part-0.npz"))
x, y = data["x"].reshape(len(data["x"]), -1)[:1216], data["y"][:1216]

classifier = tf.keras.Sequential([
    tf.keras.Input(shape=(64,)),
    tf.keras.layers.Dense(32, activation="relu"),
    tf.keras.layers.Dense(10, activation=tf.nn.softmax),
])
classifier.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                   metrics=["accuracy"])
classifier.fit(x, y, batch_size=args.batch_size, epochs=2, shuffle=False, verbose=2)


class Reconstruction(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.encode = tf.keras.layers.Dense(8, activation="relu")
        self.decode = tf.keras.layers.Dense(64)
        self.loss_tracker = tf.keras.metrics.Mean(name="loss")

    def call(self, inputs):
        return self.decode(self.encode(inputs))

    def train_step(self, data):
        with tf.GradientTape() as tape:
            reconstructed = self(data, training=True)
            loss = self.compute_loss(x=data, y=data, y_pred=reconstructed)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    @property
    def metrics(self):
        return [self.loss_tracker]


autoencoder = Reconstruction()
autoencoder.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
autoencoder.fit(x, batch_size=args.batch_size, epochs=2, shuffle=False, verbose=2)
loss, accuracy = classifier.evaluate(x[:320], y[:320], verbose=0)
print(f"evaluated {loss:.6f} {accuracy:.6f}")
np.savez(os.path.join(os.environ["SM_MODEL_DIR"], "weights.npz"), *classifier.get_weights(),
         *autoencoder.get_weights())
"""


def _weights(host: Host) -> list[np.ndarray]:
    saved = np.load(host.model_dir / "weights.npz")
    return [saved[f"arr_{i}"] for i in range(len(saved.files))]


def _evaluated(host: Host) -> tuple[float, float]:
    loss, accuracy = re.findall(r"^evaluated (\S+) (\S+)$", host.stdout(), re.M)[0]
    return float(loss), float(accuracy)


@slow
def test_keras_fit_gives_the_same_weights_on_one_device_two_replicas_and_two_hosts(
        tmp_path: Path, digits_npz, hosts: list[Host]) -> None:
    channels = {"train": digits_npz["train"]}
    calls = {"SMTRAIN_STEPS_PER_EXECUTION": "8"}
    one, wrap = _wrapped(tmp_path / "one", channels, SCRIPT, env=calls, hyperparameters={"batch-size": 64})
    hosts.append(one.start(script=wrap))
    _assert_ok(one, one.wait(TIMEOUT))
    replicas, wrap = _wrapped(tmp_path / "replicas", channels, SCRIPT, env={**calls, "SMTRAIN_CPU_REPLICAS": "2"},
                              hyperparameters={"batch-size": 32})
    hosts.append(replicas.start(script=wrap))
    _assert_ok(replicas, replicas.wait(TIMEOUT))
    code = _code_dir(tmp_path / "hosts", SCRIPT)
    chief, worker = _mwms_pair(tmp_path / "hosts", code, channels, {"batch-size": 32}, hosts, env=calls)
    _assert_ok(chief, chief.wait(TIMEOUT))
    _assert_ok(worker, worker.wait(TIMEOUT))

    for host in (one, replicas, chief):
        # Both fit calls tuned: 19 batches has no divisor near 8, so calls of 8 and Keras's last one shorter.
        assert host.stdout().count("Keras fit tuned: 8 steps per tf.function call") == 2, host.stdout()[-2000:]
    expected = _weights(one)
    assert len(expected) == 8  # the classifier's 4 arrays, then the autoencoder's
    for host in (replicas, chief, worker):
        got = _weights(host)
        assert [a.shape for a in got] == [a.shape for a in expected]
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # float32: the same sums, other graphs
    # The weights moved (equal because they trained alike, not because nothing trained).
    untrained = np.zeros_like(expected[5])
    assert not np.allclose(expected[5], untrained)
    # TensorBoard's event files (on by default, <output>/tensorboard) from the chief alone, alike on every layout:
    # each fit call in a directory of its own.
    for host in (one, replicas, chief):
        board = host.base / "output" / "tensorboard"
        assert list((board / "train").glob("events.out.tfevents.*")), host.name
        assert list((board / "fit-2" / "train").glob("events.out.tfevents.*")), host.name
    assert not (worker.base / "output" / "tensorboard").exists()
    # Keras's own evaluate after fit, distributed too: the same values everywhere.
    for host in (replicas, chief, worker):
        assert _evaluated(host) == pytest.approx(_evaluated(one), rel=1e-4)


THREADS_SCRIPT = """
import numpy as np
import tensorflow as tf


def threads():
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("Threads:")).split()[1])


class Count(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        print(f"threads after epoch {epoch + 1}: {threads()}", flush=True)


x = np.random.default_rng(0).random((32 * 300, 8), dtype=np.float32)
y = (x.sum(axis=1) > 4).astype("int64")
model = tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=[Count()])
"""


@slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="counts threads in /proc (Linux)")
def test_a_long_multi_worker_fit_keeps_its_threads(tmp_path: Path, digits_npz, hosts: list[Host]) -> None:
    """TensorFlow holds a thread for every collective op for its whole timeout: with one set, Keras's fit (about ten
    collectives a step) reached 16,000 threads within minutes and aborted. 300 steps an epoch, one step per call."""
    code = _code_dir(tmp_path, THREADS_SCRIPT)
    chief, worker = _mwms_pair(tmp_path, code, {"train": digits_npz["train"]}, {}, hosts,
                               env={"SMTRAIN_WRAP_TUNING": "off"})
    for host in (chief, worker):
        _assert_ok(host, host.wait(TIMEOUT))
        counts = [int(n) for n in re.findall(r"^threads after epoch \d: (\d+)$", host.stdout(), re.M)]
        assert len(counts) == 3 and counts[2] - counts[0] < 50, counts  # (a timeout per collective: +3,000 an epoch)
