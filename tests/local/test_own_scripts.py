"""Own scripts in real `smtrain submit --local` runs: a strict argparse script gets exactly its spec's
hyperparameters plus the SDK's --model_dir (none of the bundled entrypoint's settings), and an unchanged
plain Keras script, wrapped, trains and leaves its model in the job's model directory."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_runner import smtrain

pytestmark = pytest.mark.slow

# Declares --epochs and --model_dir only (model_dir as SageMaker users do): parse_args() exits 2 on
# anything else. Trains a linear model with NumPy so the run costs no TensorFlow start-up.
STRICT = '''\
import argparse, json, os, sys
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, required=True)
parser.add_argument("--model_dir", required=True)
args = parser.parse_args()
print("argv=" + json.dumps(sys.argv[1:]), flush=True)
print("smtrain_env=" + json.dumps(sorted(k for k in os.environ if k.startswith("SMTRAIN_"))), flush=True)
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 3))
y = x @ np.array([1.0, -2.0, 0.5])
w = np.zeros(3)
for epoch in range(1, args.epochs + 1):
    for i in range(0, len(x), 32):
        xb, yb = x[i:i + 32], y[i:i + 32]
        w -= 0.1 * 2 * xb.T @ (xb @ w - yb) / len(xb)
    print(f"epoch={epoch} loss={float(np.mean((x @ w - y) ** 2)):.6f}", flush=True)
np.save(os.path.join(os.environ["SM_MODEL_DIR"], "weights.npy"), w)
'''

# Written the way the seeds' users write it: nothing of smtrain, nothing of tf.distribute.
PLAIN_KERAS = '''\
import argparse, os
import numpy as np
import tensorflow as tf
from tensorflow import keras

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--model_dir")
args = parser.parse_args()
rng = np.random.default_rng(0)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, epochs=args.epochs, batch_size=args.batch_size)
model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))
print("saved", flush=True)
'''


def write_job(tmp_path: Path, script: str, code: dict[str, Any], **changes: Any) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(script)
    spec = {"name": "own-script", "role": "arn:aws:iam::123456789012:role/SageMakerRole", "region": "us-east-1",
            "tensorflow": {"version": "2.19"}, "compute": {"instance_type": "ml.g5.xlarge", "max_run": 600},
            "code": {"source_dir": "src", "entry_point": "train.py", **code}, "output": "out", **changes}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def submit_local(tmp_path: Path, spec: Path) -> tuple[dict[str, Any], str]:
    # SMTRAIN_EPOCHS in this machine's environment must not reach the hosts: on SageMaker only the
    # request's Environment does.
    proc = smtrain("submit", str(spec), "--local", "--job-name", "own-1", "--output", "json",
                   env={"SMTRAIN_HOME": str(tmp_path / "home"), "SMTRAIN_EPOCHS": "9"}, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)["job"], proc.stderr


def test_a_strict_argparse_script_gets_its_hyperparameters_and_model_dir_only(tmp_path: Path) -> None:
    # training: fields are the bundled entrypoint's: set here, they must not reach the script.
    spec = write_job(tmp_path, STRICT, {}, hyperparameters={"epochs": 2},
                     training={"epochs": 7, "lr_scaling": "sqrt", "gradient_accumulation_steps": 2})
    job, log = submit_local(tmp_path, spec)
    assert job["status"] == "Completed"
    [argv] = [json.loads(line) for line in re.findall(r"\[algo-1\] argv=(.*)", log)]
    assert argv == ["--epochs", "2", "--model_dir", str(tmp_path / "out" / "own-1" / "model")]
    # smtrain's one setting for it travels in the environment, for smtrain_tf.fit.
    # (and, in a local run, what the CPU stands in for: the `gpus:` line of smtrain_tf says it)
    assert re.findall(r"\[algo-1\] smtrain_env=(.*)", log) == [
        '["SMTRAIN_GRADIENT_ACCUMULATION_STEPS", "SMTRAIN_LOCAL_GPUS"]']
    assert re.findall(r"\[algo-1\] epoch=(\d+) ", log) == ["1", "2"]
    with tarfile.open(job["model_artifacts"]) as tar:
        assert "weights.npy" in tar.getnames()


def test_an_unchanged_keras_script_runs_wrapped_and_saves_its_model(tmp_path: Path) -> None:
    spec = write_job(tmp_path, PLAIN_KERAS, {"wrap": True}, hyperparameters={"epochs": 2, "batch-size": 16})
    job, log = submit_local(tmp_path, spec)
    assert job["status"] == "Completed" and "[algo-1] saved" in log, log[-4000:]
    with tarfile.open(job["model_artifacts"]) as tar:
        assert "model.keras" in tar.getnames()
