"""`tracking.mlflow` in real local runs (issue 37): each job leaves exactly one MLflow run on a real `mlflow server`,
logged by its chief, whose params are the job's facts and whose metric history is `smtrain metrics`'s rows, value
for value; a failed job's run is FAILED; a local tuning leaves a parent run and one child per trial.

The jobs: the digits demo on 2 hosts (the bundled entrypoint under MultiWorkerMirroredStrategy), the same digits as
an unchanged Keras script wrapped on 2 hosts (configs/own-script-wrapped.yaml), a wrapped script in a public form
that fails after training (it evaluates on data of another width), and the digits tuning's first 2 trials.
What the run logs and how it ends, without TensorFlow, is tests/entrypoint/test_mlflow_run.py's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from smtrain.local.tuning import read_local_tuning
from tests.support import ROOT
from tests.support.cli_runner import smtrain
from tests.support.mlflow_server import MlflowServer

from .test_own_scripts import write_job

pytestmark = pytest.mark.slow


def _submit(tmp_path: Path, spec: Path, job: str, server: MlflowServer, experiment: str, digits_dir: Path,
            *sets: str) -> tuple[int, str]:
    env = {"SMTRAIN_HOME": str(tmp_path / "home"), "SMTRAIN_DEMO_DATA": str(digits_dir),
           "SMTRAIN_DEMO_OUTPUT": str(tmp_path / "out")}
    done = smtrain("submit", str(spec), "--local", "--job-name", job, "--set", f"tracking.mlflow={server.uri}",
                   "--set", f"tracking.experiment={experiment}", *[a for s in sets for a in ("--set", s)],
                   env=env, cwd=tmp_path, timeout=600)
    return done.returncode, done.stderr


def _metric_rows(tmp_path: Path, job: str) -> list[dict[str, Any]]:
    shown = smtrain("metrics", job, "--output", "json", env={"SMTRAIN_HOME": str(tmp_path / "home")}, cwd=tmp_path,
                    timeout=60)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["epochs"]


def assert_history_is_smtrain_metrics(server: MlflowServer, run: Any, rows: list[dict[str, Any]]) -> None:
    """Every value of every row of `smtrain metrics` is the MLflow run's value of that name at step = epoch."""
    assert rows
    expected: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        for name, value in row["values"].items():
            key = name if row["fit"] == 1 else f"fit{row['fit']}/{name}"
            expected.setdefault(key, []).append((row["epoch"], value))
    client = server.client()
    found = {key: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)] for key in expected}
    assert found == expected


def test_the_digits_demo_on_two_hosts_leaves_one_run_equal_to_smtrain_metrics(tmp_path, mlflow_server, digits):
    code, log = _submit(tmp_path, ROOT / "configs" / "local-demo.yaml", "demo-1", mlflow_server, "demo", digits,
                        "training.epochs=3")
    assert code == 0, log[-4000:]
    [run] = mlflow_server.runs("demo")  # one run for 2 hosts: the chief's
    assert run.info.status == "FINISHED" and run.info.run_name == "demo-1"
    params = run.data.params
    assert {k: params[k] for k in ("job", "instance_type", "hosts", "replicas", "workers", "strategy", "global_batch",
                                   "learning_rate", "hp.epochs", "hp.lr_scaling")} == {
        "job": "demo-1", "instance_type": "ml.g5.xlarge", "hosts": "2", "replicas": "2", "workers": "2",
        "strategy": "multi_worker_mirrored", "global_batch": "64", "learning_rate": "0.002", "hp.epochs": "3",
        "hp.lr_scaling": "linear"}  # 32 per replica x 2; 0.001 scaled linearly by 2
    assert re.fullmatch(r"[0-9a-f]{64}", params["code_sha256"]) and params["tensorflow_version"].startswith("2.")
    assert "tensorflow-training:2.21" in params["image"] and params["smtrain_version"]
    assert run.data.tags["model_uri"] == str(tmp_path / "out" / "demo-1" / "output" / "model.tar.gz")
    assert Path(run.data.tags["model_uri"]).is_file()
    rows = _metric_rows(tmp_path, "demo-1")
    assert [row["epoch"] for row in rows] == [1, 2, 3]
    assert_history_is_smtrain_metrics(mlflow_server, run, rows)
    logs = smtrain("logs", "demo-1", env={"SMTRAIN_HOME": str(tmp_path / "home")}, cwd=tmp_path, timeout=60).stdout
    # The client smtrain adds, installed as SageMaker's toolkit would (with its dependencies; here all present).
    assert "installing what smtrain added: mlflow-skinny==3.17.2" in log + logs
    said = re.findall(r"\[(algo-\d)\] tracking: (.*)", logs)  # started and ended, on the chief alone
    assert said == [("algo-1", f"MLflow run {run.info.run_id} (demo-1) in experiment {run.info.experiment_id}"),
                    ("algo-1", f"MLflow run {run.info.run_id} FINISHED")], logs[-3000:]


def test_a_wrapped_keras_script_on_two_hosts_leaves_one_run_equal_to_smtrain_metrics(tmp_path, mlflow_server,
                                                                                      digits):
    code, log = _submit(tmp_path, ROOT / "configs" / "own-script-wrapped.yaml", "wrapped-1", mlflow_server,
                        "wrapped", digits, "hyperparameters.epochs=2")
    assert code == 0, log[-4000:]
    [run] = mlflow_server.runs("wrapped")
    assert run.info.status == "FINISHED"
    params = run.data.params
    assert {k: params[k] for k in ("hosts", "replicas", "strategy", "global_batch", "learning_rate", "hp.epochs",
                                   "hp.batch-size")} == {
        "hosts": "2", "replicas": "2", "strategy": "multi_worker_mirrored", "global_batch": "64",
        "learning_rate": "0.001", "hp.epochs": "2", "hp.batch-size": "32"}  # the wrap leaves the script's rate
    assert_history_is_smtrain_metrics(mlflow_server, run, _metric_rows(tmp_path, "wrapped-1"))


FAILING = '''\
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")
model = tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, epochs=2, batch_size=32, verbose=2)
held_out = rng.normal(size=(64, 9)).astype("float32")  # a feature more than the model was built for
print(model.evaluate(held_out, (held_out.sum(axis=1) > 0).astype("int64"), verbose=2))
'''


def test_a_job_that_fails_after_training_leaves_a_failed_run_with_its_epochs(tmp_path, mlflow_server, digits):
    spec = write_job(tmp_path, FAILING, {"wrap": True}, compute={"instance_type": "ml.g5.xlarge", "max_run": 600})
    code, log = _submit(tmp_path, spec, "failing-1", mlflow_server, "failing", digits)
    assert code != 0, log[-4000:]
    [run] = mlflow_server.runs("failing")
    assert run.info.status == "FAILED" and "model_uri" not in run.data.tags
    assert_history_is_smtrain_metrics(mlflow_server, run, _metric_rows(tmp_path, "failing-1"))


def test_a_local_tuning_of_two_trials_leaves_a_parent_and_two_children(tmp_path, mlflow_server, digits):
    env = {"SMTRAIN_HOME": str(tmp_path / "home"), "SMTRAIN_DEMO_DATA": str(digits),
           "SMTRAIN_DEMO_OUTPUT": str(tmp_path / "out")}
    tuned = smtrain("tune", str(ROOT / "configs" / "tune-digits.yaml"), "--local", "--job-name", "digits-t",
                    "--set", "tuning.max_jobs=2", "--set", "training.epochs=1", "--set",
                    f"tracking.mlflow={mlflow_server.uri}", "--set", "tracking.experiment=tuned", env=env,
                    cwd=tmp_path, timeout=900)
    assert tuned.returncode == 0, tuned.stderr[-4000:]
    runs = mlflow_server.runs("tuned")
    [parent] = [r for r in runs if r.data.tags.get("smtrain.parent") == "yes"]
    children = sorted((r for r in runs if r is not parent), key=lambda r: r.info.run_name)
    assert parent.info.run_name == "digits-t" and parent.info.status == "FINISHED"
    assert [r.info.run_name for r in children] == ["digits-t-001", "digits-t-002"]
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in children)
    record = read_local_tuning("digits-t", tmp_path / "home")
    assert record is not None
    for trial, child in zip(record["trials"], children, strict=True):  # each child holds its trial's values
        assert float(child.data.params["hp.learning_rate"]) == pytest.approx(trial["values"]["training.learning_rate"])
        assert child.data.params["hp.batch_size_per_replica"] == str(trial["values"]["training.batch_size_per_replica"])
    for child in children:
        assert child.info.status == "FINISHED"
        assert_history_is_smtrain_metrics(mlflow_server, child, _metric_rows(tmp_path, child.info.run_name))


# A script with smtrain_tf's helper that also logs to MLflow itself, in the form SageMaker's MLflow examples take
# (its own run around the training, its arguments as params; none copied).
HELPER_WITH_OWN_RUN = '''\
import argparse

import mlflow
import numpy as np
import smtrain_tf
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--model_dir")
args = parser.parse_args()

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int64")
with mlflow.start_run(run_name="my-own-run"):
    mlflow.log_params({"epochs": args.epochs, "units": 16})
    with smtrain_tf.strategy().scope():
        model = tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(16, activation="relu"),
                                     tf.keras.layers.Dense(2, activation="softmax")])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = smtrain_tf.fit(model, (x, y), epochs=args.epochs, batch_size_per_replica=32)
    mlflow.log_metric("final_loss", history.history["loss"][-1])
    smtrain_tf.save(model)
'''


def test_a_helper_script_that_logs_its_own_run_keeps_it_beside_smtrains(tmp_path, mlflow_server, digits):
    spec = write_job(tmp_path, HELPER_WITH_OWN_RUN, {}, hyperparameters={"epochs": 2},
                     compute={"instance_type": "ml.g5.12xlarge", "max_run": 600})
    code, log = _submit(tmp_path, spec, "helper-1", mlflow_server, "helper", digits)
    assert code == 0, log[-4000:]
    runs = {r.info.run_name: r for r in mlflow_server.runs("helper")}
    assert sorted(runs) == ["helper-1", "my-own-run"]  # smtrain's (named for the job) and the script's own
    ours, theirs = runs["helper-1"], runs["my-own-run"]
    assert ours.info.status == theirs.info.status == "FINISHED"
    assert {k: ours.data.params[k] for k in ("replicas", "strategy", "global_batch", "hp.epochs")} == {
        "replicas": "4", "strategy": "mirrored", "global_batch": "128", "hp.epochs": "2"}  # 4 GPUs of a g5.12xlarge
    assert theirs.data.params == {"epochs": "2", "units": "16"} and "final_loss" in theirs.data.metrics
    assert ours.data.tags["smtrain.script_run"] == theirs.info.run_id
    assert theirs.data.tags["smtrain.job_run"] == ours.info.run_id
    assert_history_is_smtrain_metrics(mlflow_server, ours, _metric_rows(tmp_path, "helper-1"))
