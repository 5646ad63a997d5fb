"""`smtrain submit SPEC --local` through a real process, and the lifecycle commands on local jobs.

Assumes the wiring: `submit --local` streams host output on stderr, prints submit's JSON (the
finished job, as `status --output json` shows it, under "job") on stdout with --output json, and
exits with the job's status code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtrain.jobs import JobInfo
from smtrain.local.demo_data import write_digits
from tests.support.cli_runner import smtrain

JOB_KEYS = set(JobInfo(name="x", backend="local", status="Completed").to_dict())
SUBMIT_KEYS = {"job_name", "arn", "region", "status", "upload", "console_url", "logs_url", "commands", "job",
               "preflight", "metrics"}


@pytest.fixture
def local_env(tmp_path: Path) -> dict[str, str]:
    if "--local" not in smtrain("submit", "--help").stdout:
        pytest.skip("`smtrain submit --local` is not wired into the CLI yet")
    write_digits(tmp_path / "digits")
    return {"SMTRAIN_HOME": str(tmp_path / "home"), "SMTRAIN_DEMO_DATA": str(tmp_path / "digits"),
            "SMTRAIN_DEMO_OUTPUT": str(tmp_path / "out"), "SMTRAIN_POLL_SECONDS": "0.2"}


@pytest.mark.slow
def test_submit_local_trains_the_demo_spec_and_every_job_command_sees_it(local_env: dict[str, str]) -> None:
    proc = smtrain("submit", "configs/local-demo.yaml", "--local", "--set", "training.epochs=2", "--output", "json",
                   env=local_env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    submitted = json.loads(proc.stdout)
    # The keys of `submit` (README "JSON output"), the finished job under "job".
    assert set(submitted) == SUBMIT_KEYS and submitted["status"] == "Completed" and submitted["arn"] is None
    assert submitted["upload"]["uploaded"] is False and Path(submitted["upload"]["uri"]).is_file()
    job = submitted["job"]
    assert set(job) == JOB_KEYS and job["status"] == "Completed" and job["backend"] == "local"
    assert "[algo-1] epoch=2 " in proc.stderr and "[algo-2] " in proc.stderr
    # The run ends with its metrics summary: the chief's last epoch, read from its log as SageMaker would.
    summary = submitted["metrics"]
    assert summary["host"] == "algo-1" and summary["epochs"] == 2 and summary["last_epoch"]["epoch"] == 2
    assert {"train:loss", "validation:accuracy"} <= set(summary["last_epoch"]["values"]), summary
    assert Path(job["model_artifacts"]).is_file()
    status = smtrain("status", job["name"], "--output", "json", env=local_env)
    assert status.returncode == 0 and json.loads(status.stdout) == job
    listed = json.loads(smtrain("list", "--local", "--output", "json", env=local_env).stdout)
    assert [j["name"] for j in listed["jobs"]] == [job["name"]]
    logs = smtrain("logs", job["name"], "--output", "json", env=local_env)
    events = [json.loads(line) for line in logs.stdout.splitlines()]
    assert {e["host"] for e in events} == {"algo-1", "algo-2"}


def test_submit_local_failure_exits_1_with_the_reason(local_env: dict[str, str]) -> None:
    proc = smtrain("submit", "configs/local-demo.yaml", "--local", "--set", "hyperparameters.num_classes=-1",
                   "--output", "json", env=local_env, timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    job = json.loads(proc.stdout)["job"]
    assert job["status"] == "Failed" and job["failure_reason"].startswith("AlgorithmError: ")
    assert job["model_artifacts"] is None
    status = smtrain("status", job["name"], env=local_env)
    assert status.returncode == 1 and "none: the job saved no model" in status.stdout
