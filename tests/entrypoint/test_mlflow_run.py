"""The job's MLflow run (smtrain_tf/contract/mlflow_run.py) against a real `mlflow server`, in processes of their
own as a job's chief is one, without TensorFlow: what it logs, how it ends (FINISHED, FAILED on an uncaught
exception or a reported failure, KILLED on SIGTERM, the process still ending as SIGTERM ends it), a tuning
trial's parent, a server that does not answer (one line, the program goes on), a check's run (no run).

The real training runs that log (the digits demo, a wrapped script, a local tuning) are
tests/local/test_mlflow_tracking.py's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import free_port
from tests.support.mlflow_server import MlflowServer

from .sagemaker_env import REPO_ROOT

SHA = "ab" * 32
PROGRAM = '''\
import sys, time
from smtrain_tf.contract import mlflow_run, failure

say = lambda line: print(line, flush=True)
mlflow_run.begin({"replicas": 4, "strategy": "mirrored"}, say)
mlflow_run.epoch({"epoch": "1", "step": "10", "loss": "0.5000", "accuracy": "0.8000", "val_loss": "0.6000",
                  "lr": "0.002", "examples_per_sec": "123", "elapsed": "1.5"})
mlflow_run.epoch({"epoch": "2", "step": "20", "loss": "0.2500", "accuracy": "0.9000", "val_loss": "0.4000",
                  "lr": "0.002", "examples_per_sec": "456", "elapsed": "2.5"})
mlflow_run.epoch({"epoch": "1", "step": "30", "fit": "2", "loss": "0.1250"}, 2)
how = sys.argv[1]
if how == "raise":
    raise ValueError("the script failed after training")
if how == "report":
    failure.report("a known failure")
    sys.exit(1)
if how == "sleep":
    print("sleeping", flush=True)
    time.sleep(120)
print("done", flush=True)
'''


def _env(server: MlflowServer, experiment: str, tmp_path: Path, **settings: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "SM_", "SMTRAIN_"))}
    env.update({
        "PYTHONPATH": str(REPO_ROOT / "entrypoints"), "MLFLOW_TRACKING_URI": server.uri,
        "MLFLOW_EXPERIMENT_NAME": experiment, "TRAINING_JOB_NAME": "job-1", "SM_CURRENT_HOST": "algo-1",
        "SM_RESOURCE_CONFIG": json.dumps({"current_instance_type": "ml.g5.12xlarge", "hosts": ["algo-1", "algo-2"]}),
        "SM_NUM_GPUS": "4", "SM_MODULE_DIR": f"s3://bucket/out/source/{SHA}/sourcedir.tar.gz",
        "SM_HPS": json.dumps({"epochs": 2, "batch-size": 32, "sagemaker_program": "train.py"}),
        "SM_OUTPUT_DIR": str(tmp_path / "output"),
        "SMTRAIN_MLFLOW": json.dumps({"image": "the-image", "smtrain": "9.9.9", "output": "s3://bucket/out",
                                      **settings}),
    })
    return env


def _run(env: dict[str, str], how: str = "ok", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROGRAM, how], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _history(server: MlflowServer, run: Any, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in server.client().get_metric_history(run.info.run_id, key)]


def test_a_finished_run_holds_the_jobs_facts_each_epochs_values_and_the_model(mlflow_server, tmp_path):
    done = _run(_env(mlflow_server, "finished", tmp_path, run="first"))
    assert done.returncode == 0, done.stderr
    [run] = mlflow_server.runs("finished")
    assert run.info.status == "FINISHED" and run.info.run_name == "first"
    assert run.data.params == {
        "job": "job-1", "instance_type": "ml.g5.12xlarge", "hosts": "2", "gpus_per_host": "4", "image": "the-image",
        "smtrain_version": "9.9.9", "tensorflow_version": "", "code_sha256": SHA, "hp.epochs": "2",
        "hp.batch-size": "32", "replicas": "4", "strategy": "mirrored"}
    assert run.data.tags["model_uri"] == "s3://bucket/out/job-1/output/model.tar.gz"
    assert run.data.tags["smtrain.job"] == "job-1" and "mlflow.parentRunId" not in run.data.tags
    assert _history(mlflow_server, run, "train:loss") == [(1, 0.5), (2, 0.25)]
    assert _history(mlflow_server, run, "validation:loss") == [(1, 0.6), (2, 0.4)]
    assert _history(mlflow_server, run, "train:learning_rate") == [(1, 0.002), (2, 0.002)]
    assert _history(mlflow_server, run, "train:examples_per_sec") == [(1, 123), (2, 456)]
    assert _history(mlflow_server, run, "global_step") == [(1, 10), (2, 20)]
    assert _history(mlflow_server, run, "fit2/train:loss") == [(1, 0.125)]  # a second fit call's own series
    assert set(run.data.metrics) == {"train:loss", "train:accuracy", "validation:loss", "train:learning_rate",
                                     "train:examples_per_sec", "global_step", "elapsed_seconds", "fit2/train:loss",
                                     "fit2/global_step"}
    assert f"tracking: MLflow run {run.info.run_id} FINISHED" in done.stdout


@pytest.mark.parametrize("how", ["raise", "report"])
def test_a_script_that_raises_or_reports_a_failure_leaves_a_failed_run(mlflow_server, tmp_path, how):
    failed = _run(_env(mlflow_server, f"failed-{how}", tmp_path), how)
    assert failed.returncode == 1
    [run] = mlflow_server.runs(f"failed-{how}")
    assert run.info.status == "FAILED" and "model_uri" not in run.data.tags  # no model to point at
    assert _history(mlflow_server, run, "train:loss") == [(1, 0.5), (2, 0.25)]  # what it did log stays


def test_sigterm_ends_the_run_killed_and_the_process_as_sigterm_does(mlflow_server, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM, "sleep"], env=_env(mlflow_server, "killed", tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the run exists and its epochs are logged once "sleeping" is said
            if line.strip() == "sleeping":
                break
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGTERM
    [run] = mlflow_server.runs("killed")
    assert run.info.status == "KILLED"


def test_trials_of_one_tuning_job_are_children_of_one_parent(mlflow_server, tmp_path):
    for trial in ("tune-1-001", "tune-1-002"):
        env = {**_env(mlflow_server, "tuned", tmp_path, tuning="tune-1"), "TRAINING_JOB_NAME": trial}
        assert _run(env).returncode == 0
    runs = mlflow_server.runs("tuned")
    [parent] = [r for r in runs if r.data.tags.get("smtrain.parent") == "yes"]
    children = [r for r in runs if r is not parent]
    assert parent.info.run_name == "tune-1" and parent.info.status == "FINISHED"
    assert sorted(r.info.run_name for r in children) == ["tune-1-001", "tune-1-002"]
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}


def test_two_trials_that_start_at_once_keep_one_parent(mlflow_server, tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM, "ok"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**_env(mlflow_server, "raced", tmp_path, tuning="tune-2"),
                                   "TRAINING_JOB_NAME": f"tune-2-00{n}"}) for n in (1, 2)]
    for proc in procs:
        proc.communicate(timeout=120)
        assert proc.returncode == 0
    runs = mlflow_server.runs("raced")  # deleted runs are not listed
    parents = [r for r in runs if r.data.tags.get("smtrain.parent") == "yes"]
    assert len(parents) == 1 and len(runs) == 3
    assert {r.data.tags["mlflow.parentRunId"] for r in runs if r is not parents[0]} == {parents[0].info.run_id}


def test_a_server_that_does_not_answer_is_one_line_and_the_program_goes_on(tmp_path):
    env = _env(MlflowServer(f"http://127.0.0.1:{free_port()}", tmp_path), "nowhere", tmp_path)  # nobody listens
    env["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"  # the job's own setting wins over smtrain's shorter default
    done = _run(env)
    assert done.returncode == 0 and "done" in done.stdout
    said = [line for line in done.stdout.splitlines() if line.startswith("tracking:")]
    assert len(said) == 1 and said[0].startswith("tracking: MLflow run start failed (") and \
        said[0].endswith("training goes on without the run"), done.stdout


def test_a_check_run_and_a_job_without_tracking_log_nothing(mlflow_server, tmp_path):
    env = _env(mlflow_server, "rehearsal", tmp_path)
    assert _run({**env, "SMTRAIN_CHECK_DIR": str(tmp_path / "check")}).returncode == 0
    assert _run({k: v for k, v in env.items() if k != "SMTRAIN_MLFLOW"}).returncode == 0
    assert mlflow_server.client().get_experiment_by_name("rehearsal") is None  # not even made
