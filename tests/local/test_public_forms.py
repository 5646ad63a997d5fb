"""A script in the forms public ones have, wrapped, in real `smtrain submit --local` runs on 1 host x 4 replicas and
on 2 hosts: it ends (exit 0) with the same weights on every host and one model saved.

The forms (read in keras.io's "Multi-GPU distributed training with TensorFlow" guide and the SageMaker
examples' multi-worker script; none copied): its own `tf.distribute.MultiWorkerMirroredStrategy()`,
`ModelCheckpoint` into a relative `./ckpt` and a second
`run_training()` that restores from the latest file found there, a third `fit` call, `loss, acc =
model.evaluate(...)` after training, and `strategy.cluster_resolver` read at the end.
"""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest

from tests.support.cli_runner import smtrain

from .test_own_scripts import submit_local, write_job

pytestmark = pytest.mark.slow

SCRIPT = '''\
import argparse
import glob
import os

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--model_dir")
args, _ = parser.parse_known_args()

strategy = tf.distribute.MultiWorkerMirroredStrategy()
rng = np.random.default_rng(0)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")
checkpoint_dir = "./ckpt"


def make_or_restore_model():
    checkpoints = glob.glob(os.path.join(checkpoint_dir, "*.keras"))
    if checkpoints:
        latest = max(checkpoints, key=os.path.getctime)
        print("Restoring from", latest)
        return tf.keras.models.load_model(latest)
    print("Creating a new model")
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(8,)),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(2, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def run_training(epochs=1):
    os.makedirs(checkpoint_dir, exist_ok=True)
    with strategy.scope():
        model = make_or_restore_model()
    callbacks = [tf.keras.callbacks.ModelCheckpoint(filepath=checkpoint_dir + "/ckpt-{epoch}.keras")]
    model.fit(x, y, epochs=epochs, batch_size=32, callbacks=callbacks, verbose=2)
    return model


run_training(epochs=1)
model = run_training(epochs=1)
model.fit(x, y, epochs=1, batch_size=32, verbose=2)
loss, acc = model.evaluate(x, y, verbose=0)
print(f"evaluated loss={loss:.4f} acc={acc:.4f}")
resolver = strategy.cluster_resolver
print("cluster", resolver.task_type, resolver.task_id)
model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))
'''
# (Keras 3 cannot load a saved model whose activation is a tf.nn function: the restored one names its activations.
# test_wrap_layouts.py evaluates a model with tf.nn.softmax after fit.)


@pytest.mark.parametrize("compute, hosts, task", [
    ({"instance_type": "ml.g5.12xlarge", "max_run": 900}, ["algo-1"], ["None None"]),
    ({"instance_type": "ml.g5.xlarge", "nodes": 2, "max_run": 900}, ["algo-1", "algo-2"], ["worker 0", "worker 1"]),
], ids=["1-host-4-replicas", "2-hosts"])
def test_a_public_form_script_runs_to_its_end(tmp_path: Path, compute: dict, hosts: list[str],
                                              task: list[str]) -> None:
    spec = write_job(tmp_path, SCRIPT, {"wrap": True}, compute=compute)
    job, log = submit_local(tmp_path, spec)
    assert job["status"] == "Completed", log[-4000:]
    for host, answer in zip(hosts, task, strict=True):
        # The first run_training makes a model; the second restores the chief's and the worker's own ./ckpt alike.
        assert re.findall(rf"\[{host}\] (Creating a new model|Restoring from \S+)", log) == [
            "Creating a new model", "Restoring from ./ckpt/ckpt-1.keras"], log[-4000:]
        assert f"[{host}] cluster {answer}" in log
    # One metric line per epoch of the three fit calls (the chief's), and the same weights on every host.
    assert re.findall(r"\[algo-1\] epoch=(\d+) ", log) == ["1", "1", "1"]
    shown = smtrain("metrics", "own-1", "--output", "json", env={"SMTRAIN_HOME": str(tmp_path / "home")},
                    cwd=tmp_path, timeout=60)
    rows = json.loads(shown.stdout)["epochs"]
    assert [(row["fit"], row["epoch"]) for row in rows] == [(1, 1), (2, 1), (3, 1)]  # nothing merged
    digests = {host: re.findall(rf"\[{host}\] weights_sha256=(\w+)", log) for host in hosts}
    assert all(len(found) == 1 for found in digests.values()) and len({d[0] for d in digests.values()}) == 1
    evaluated = {host: re.findall(rf"\[{host}\] evaluated (.*)", log) for host in hosts}
    assert len({tuple(v) for v in evaluated.values()}) == 1 and evaluated["algo-1"]
    with tarfile.open(job["model_artifacts"]) as tar:
        assert [n for n in tar.getnames() if n.endswith(".keras")] == ["model.keras"]


# Keras 2 forms, as TensorFlow's docs and keras.io wrote them before Keras 3 (none copied): an optimizer
# given lr=, metrics reset with reset_states() at each epoch's start, and a SavedModel written by
# model.save(path) to a path without an extension. Keras 3 refuses all three; with tensorflow.keras: 2 the
# job runs them as written, on tf_keras.
KERAS2_SCRIPT = '''\
import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")
print("keras module", tf.keras.Model.__module__.split(".")[0])

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(2, activation="softmax"),
])
model.compile(optimizer=tf.keras.optimizers.Adam(lr=0.01), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])


class ResetMetrics(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        for metric in self.model.metrics:
            metric.reset_states()


model.fit(x, y, epochs=2, batch_size=32, callbacks=[ResetMetrics()], verbose=2)
loss, acc = model.evaluate(x, y, verbose=0)
print(f"evaluated loss={loss:.4f} acc={acc:.4f}")
model.save(os.path.join(os.environ["SM_MODEL_DIR"], "1"))
'''


@pytest.mark.parametrize("compute, hosts", [
    ({"instance_type": "ml.g5.12xlarge", "max_run": 900}, ["algo-1"]),
    ({"instance_type": "ml.g5.xlarge", "nodes": 2, "max_run": 900}, ["algo-1", "algo-2"]),
], ids=["1-host-4-replicas", "2-hosts"])
def test_a_keras_2_script_runs_as_written_with_keras_2(tmp_path: Path, compute: dict, hosts: list[str]) -> None:
    spec = write_job(tmp_path, KERAS2_SCRIPT, {"wrap": True}, compute=compute,
                     tensorflow={"version": "2.21", "keras": 2})
    # Keras 3 would refuse the script before the job starts: validate names the breaks (tests/preflight).
    job, log = submit_local(tmp_path, spec)
    assert job["status"] == "Completed", log[-4000:]
    # The job's requirements.txt asks for tf-keras of the image's TensorFlow; the local run installs the one of
    # this machine's (2.21 here too), without installing TensorFlow again.
    assert "[algo-1] installing what smtrain added for this machine's TensorFlow 2.21" in log
    for host in hosts:
        assert f"[{host}] keras module tf_keras" in log, log[-4000:]
    assert re.findall(r"\[algo-1\] epoch=(\d+) ", log) == ["1", "2"]
    digests = {host: re.findall(rf"\[{host}\] weights_sha256=(\w+)", log) for host in hosts}
    assert all(len(found) == 1 for found in digests.values()) and len({d[0] for d in digests.values()}) == 1
    with tarfile.open(job["model_artifacts"]) as tar:
        assert "1/saved_model.pb" in tar.getnames()  # one SavedModel, the chief's
        assert not any(n.startswith("tmp") or "worker" in n for n in tar.getnames())
