"""A tutorial-style script, wrapped, on every layout and setting a user meets: its own MirroredStrategy(), a
tf.data pipeline batched with `per_replica * strategy.num_replicas_in_sync`, fit with the default progress bar,
`loss, acc = model.evaluate(...)`, then a save.

Runs (each setting met at least once, on the layouts where it differs): 1 host x 1 replica tuned and untuned
(with linear rate scaling, which one replica leaves as it is), 1 host x 4 replicas tuned with linear scaling and
untuned without, 2 hosts tuned with linear scaling; and the script by plain `python` on one device, whose
evaluate values the one-replica runs must give.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .sagemaker_env import Host
from .test_wrap import TIMEOUT, _assert_ok, _code_dir, _mwms_pair, _wrapped

slow = pytest.mark.slow  # starts processes that train for real

SCRIPT = """
import os

import numpy as np
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
print("Number of devices: {}".format(strategy.num_replicas_in_sync))

BATCH_SIZE_PER_REPLICA = 32
BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync

data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "part-0.npz"))
images, labels = data["x"].reshape(-1, 64).astype("float32"), data["y"]
train_ds = tf.data.Dataset.from_tensor_slices((images[:1024], labels[:1024])).shuffle(1024, seed=5).batch(BATCH_SIZE)
val_ds = tf.data.Dataset.from_tensor_slices((images[1024:], labels[1024:])).batch(BATCH_SIZE)

tf.keras.utils.set_random_seed(5)
with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=tf.keras.optimizers.Adam(learning_rate=0.001), metrics=["accuracy"])

model.fit(train_ds, epochs=3, validation_data=val_ds)
loss, acc = model.evaluate(val_ds, verbose=0)
print(f"Eval loss: {loss:.6f}, Eval accuracy: {acc:.6f}")
model.save(os.path.join(os.environ.get("SM_MODEL_DIR", "."), "model.keras"))
"""


def _evaluated(host: Host) -> tuple[float, float]:
    found = re.findall(r"^Eval loss: (\S+), Eval accuracy: (\S+)$", host.stdout(), re.M)
    assert len(found) == 1, host.stdout()[-3000:]
    return float(found[0][0]), float(found[0][1])


def _one_host(tmp_path: Path, name: str, channels: dict[str, Path], hosts: list[Host], env: dict[str, str],
              wrapped: bool = True) -> Host:
    host, wrap = _wrapped(tmp_path / name, channels, SCRIPT, env=env, hyperparameters={})
    hosts.append(host.start(script=wrap if wrapped else wrap.parent / "train.py"))
    _assert_ok(host, host.wait(TIMEOUT))
    assert sorted(p.name for p in host.model_dir.iterdir()) == ["model.keras"]
    return host


@slow
def test_a_tutorial_script_completes_on_every_layout_and_setting(tmp_path: Path, digits_npz,
                                                                  hosts: list[Host]) -> None:
    channels = {"train": digits_npz["train"]}
    plain = _one_host(tmp_path, "plain", channels, hosts, {}, wrapped=False)
    assert "Number of devices: 1" in plain.stdout()
    tuned = _one_host(tmp_path, "tuned", channels, hosts, {"SMTRAIN_LR_SCALING": "linear"})
    untuned = _one_host(tmp_path, "untuned", channels, hosts, {"SMTRAIN_WRAP_TUNING": "off"})
    # One device: what plain python gives, tuned or not (the same steps, fewer calls), linear scaling or not.
    for run in (tuned, untuned):
        assert _evaluated(run) == pytest.approx(_evaluated(plain), rel=1e-5)
    assert "Keras fit tuned" in tuned.stdout() and "Keras fit tuned" not in untuned.stdout()
    assert "learning rate 0.001 -> 0.001 (linear, 1 replica)" in tuned.stdout()

    four = _one_host(tmp_path, "four", channels, hosts, {"SMTRAIN_CPU_REPLICAS": "4", "SMTRAIN_LR_SCALING": "linear"})
    four_untuned = _one_host(tmp_path, "four-untuned", channels, hosts,
                             {"SMTRAIN_CPU_REPLICAS": "4", "SMTRAIN_WRAP_TUNING": "off"})
    assert "Number of devices: 4" in four.stdout()
    assert "learning rate 0.001 -> 0.004 (linear, 4 replicas)" in four.stdout()
    assert "Keras fit tuned" in four.stdout() and "Keras fit tuned" not in four_untuned.stdout()
    for run in (four, four_untuned):
        loss, accuracy = _evaluated(run)
        assert 0.0 < loss < 2.5 and 0.3 < accuracy <= 1.0  # trained: ten classes start near 2.3 and 0.1

    code = _code_dir(tmp_path / "hosts", SCRIPT)
    chief, worker = _mwms_pair(tmp_path / "hosts", code, channels, {}, hosts, env={"SMTRAIN_LR_SCALING": "linear"})
    _assert_ok(chief, chief.wait(TIMEOUT))
    _assert_ok(worker, worker.wait(TIMEOUT))
    assert "Number of devices: 2" in chief.stdout()
    assert _evaluated(chief) == _evaluated(worker)  # one evaluation, distributed over both hosts
    assert sorted(p.name for p in chief.model_dir.iterdir()) == ["model.keras"]
    assert list(worker.model_dir.iterdir()) == []
