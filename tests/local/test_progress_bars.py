"""A wrapped script that calls `fit` with Keras's default progress bar, in real local runs.

The bar rewrites its line with carriage returns and backspaces and leaves it open at the end of an
epoch. smtrain's metric line must still be a line of its own (the job's MetricDefinitions read it on
SageMaker as here), and `smtrain logs`, `smtrain metrics`, the run summary and `tune --local` read
each line as a terminal shows it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_runner import smtrain

pytestmark = pytest.mark.slow

# The form every Keras tutorial has: fit with the default verbose, validation data, argparse with dashes.
SCRIPT = '''\
import argparse, os
import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--learning-rate", type=float, default=0.001)
parser.add_argument("--model_dir")
args = parser.parse_args()
rng = np.random.default_rng(0)
x = rng.normal(size=(640, 8)).astype("float32")
y = (x[:, :4].sum(axis=1) > 0).astype("int32")
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer=tf.keras.optimizers.Adam(args.learning_rate), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
model.fit(x[:512], y[:512], epochs=args.epochs, batch_size=32, validation_data=(x[512:], y[512:]))
model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))
'''
EPOCHS = 3


def _spec(tmp_path: Path, **changes: Any) -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text(SCRIPT)
    spec = {"name": "bar", "role": "arn:aws:iam::123456789012:role/SageMakerRole", "region": "us-east-1",
            "compute": {"instance_type": "ml.g5.xlarge", "max_run": 600},
            "code": {"source_dir": "src", "entry_point": "train.py", "wrap": True},
            "hyperparameters": {"epochs": EPOCHS, "learning-rate": 0.01}, "output": "out", **changes}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_every_epoch_of_a_progress_bar_run_is_a_metric_row_in_logs_metrics_and_the_summary(tmp_path: Path) -> None:
    env = {"SMTRAIN_HOME": str(tmp_path / "home")}
    run = smtrain("submit", str(_spec(tmp_path)), "--local", "--job-name", "bar-1", env=env, cwd=tmp_path,
                  timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = run.stdout[run.stdout.index("job        bar-1"):]
    assert f"metrics    epoch {EPOCHS} (algo-1): loss " in summary and "val_accuracy" in summary, summary
    # The terminal got each bar as drawn last, the metric line apart from it.
    shown = run.stdout.split("\n")
    assert sum(line.startswith("[algo-1] epoch=") for line in shown) == EPOCHS
    assert not any("\r" in line or "\b" in line for line in shown)

    log = (tmp_path / "home" / "local-jobs" / "bar-1" / "logs" / "algo-1.log").read_bytes().decode()
    # The host's log keeps each line as a terminal drew it (a file someone `cat`s is a terminal too):
    # the bar's last state, no control character.
    assert "━" in log and not any(c in log for c in "\r\b\x1b")

    logs = smtrain("logs", "bar-1", "-o", "json", env=env, cwd=tmp_path)
    assert logs.returncode == 0, logs.stderr
    messages = [json.loads(line)["message"] for line in logs.stdout.splitlines()]
    assert [m.split()[0] for m in messages if m.startswith("epoch=")] == [f"epoch={n}" for n in range(1, EPOCHS + 1)]
    bars = [m for m in messages if "━" in m]  # Keras's bar: each epoch's last state, nothing empty or cut
    assert len(bars) >= EPOCHS and all("\r" not in m and "\b" not in m for m in messages)
    # Each epoch's bar ends drawn whole, with the validation values (a state drawn before validation, cut by
    # the epoch's metric line, may come first: with the wrap's tuned fit the bar moves once, to 16/16).
    assert sum(m.startswith("16/16") and " - val_accuracy: " in m for m in bars) == EPOCHS

    metrics = smtrain("metrics", "bar-1", "-o", "json", env=env, cwd=tmp_path)
    assert metrics.returncode == 0, metrics.stderr
    table = json.loads(metrics.stdout)
    assert [row["epoch"] for row in table["epochs"]] == list(range(1, EPOCHS + 1)), table
    assert set(table["final"]) >= {"train:loss", "train:accuracy", "validation:loss", "validation:accuracy"}


def test_tune_local_on_a_progress_bar_script_picks_a_best_trial(tmp_path: Path) -> None:
    spec = _spec(tmp_path, tuning={"objective": "validation:accuracy", "strategy": "grid",
                                   "ranges": {"hyperparameters.learning-rate": {"values": [0.0001, 0.03]}}},
                 hyperparameters={"epochs": 2, "learning-rate": 0.01})
    tuned = smtrain("tune", str(spec), "--local", "--job-name", "bars", "-o", "json",
                    env={"SMTRAIN_HOME": str(tmp_path / "home")}, cwd=tmp_path, timeout=900)
    assert tuned.returncode == 0, tuned.stdout[-3000:] + tuned.stderr[-3000:]
    data = json.loads(tuned.stdout)
    assert [t["status"] for t in data["trials"]] == ["Completed", "Completed"]
    assert all(isinstance(t["objective"], float) for t in data["trials"]), data["trials"]
    best = max(data["trials"], key=lambda t: t["objective"])
    assert data["best"]["name"] == best["name"]
