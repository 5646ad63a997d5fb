"""status, list, logs, wait and stop against a live moto server, each `smtrain` a subprocess.

Jobs are made directly on the server (no submit needed), and the test moves them between states
through the harness (moto alone makes every job Completed at once).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import signal
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from smtrain.aws import DEFAULT_MAX_ATTEMPTS
from smtrain.jobs import JobInfo
from tests.cli.test_startup import HEAVY, PROBE
from tests.support.cli_runner import ROOT, smtrain, start_smtrain
from tests.support.moto_server import Fault, MotoServer, create_job

# The live server's fixtures (see tests/moto_server.py).

JOB_KEYS = {"name", "backend", "status", "secondary_status", "created", "started", "ended", "instance_type",
            "instance_count", "failure_reason", "model_artifacts", "console_url", "logs_url", "region", "cost"}


def _popen(server: MotoServer, tmp_path, *args: str) -> subprocess.Popen[str]:
    return start_smtrain(*args, env=server.env(tmp_path))


def _once_polled(server: MotoServer, action) -> threading.Thread:
    """Run `action` in the background once the command under test has described a job."""
    before = server.control.count("DescribeTrainingJob")

    def run() -> None:
        deadline = time.monotonic() + 30
        while server.control.count("DescribeTrainingJob") == before and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_status_text_json_and_exit_codes(aws: MotoServer, tmp_path):
    env = aws.env(tmp_path)
    create_job(aws, "job-status", instance_type="ml.p4d.24xlarge", count=2)
    aws.set_status("job-status", "InProgress", "Training")
    proc = smtrain("status", "job-status", env=env)
    assert proc.returncode == 0, proc.stderr
    for needle in ("InProgress (Training)", "2 x ml.p4d.24xlarge", "#/jobs/job-status",
                   "logStream:group=/aws/sagemaker/TrainingJobs;prefix=job-status"):
        assert needle in proc.stdout

    aws.set_status("job-status", "Failed", failure_reason="AlgorithmError: ValueError in train.py")
    proc = smtrain("status", "job-status", "-o", "json", env=env)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert set(data) == JOB_KEYS
    assert data["status"] == "Failed" and data["failure_reason"] == "AlgorithmError: ValueError in train.py"
    assert data["instance_type"] == "ml.p4d.24xlarge" and data["instance_count"] == 2
    assert data["created"].endswith("Z") and data["ended"].endswith("Z") and data["region"] == "us-east-1"

    create_job(aws, "job-done")
    aws.set_status("job-done", "Completed")
    proc = smtrain("status", "job-done", "-o", "json", env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["model_artifacts"].endswith("/model.tar.gz")
    aws.set_status("job-done", "Stopped")
    assert smtrain("status", "job-done", env=env).returncode == 3

    proc = smtrain("status", "no-such-job", env=env)
    assert proc.returncode == 4 and proc.stderr.strip() == (
        "error: no training job named no-such-job in us-east-1 (check the name, or --region)")
    proc = smtrain("status", "job-done", "--region", "xx-nowhere-9", env=env)
    assert proc.returncode == 4 and "unknown AWS region" in proc.stderr


def test_list_filters(aws: MotoServer, tmp_path):
    env = aws.env(tmp_path)
    for name in ("alpha-1", "alpha-2", "beta-1"):
        create_job(aws, name)
    aws.set_status("alpha-1", "Completed")
    aws.set_status("beta-1", "Completed")

    data = json.loads(smtrain("list", "-o", "json", env=env).stdout)
    assert sorted(j["name"] for j in data["jobs"]) == ["alpha-1", "alpha-2", "beta-1"]
    assert all(set(j) == JOB_KEYS for j in data["jobs"])
    names = lambda *args: sorted(j["name"] for j in json.loads(smtrain("list", "-o", "json", *args, env=env).stdout)["jobs"])  # noqa: E731
    assert names("--status", "Completed", "--name-contains", "alpha") == ["alpha-1"]
    assert names("--name-contains", "alpha") == ["alpha-1", "alpha-2"]
    assert len(names("--limit", "2")) == 2
    future = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    assert names("--since", future) == []

    text = smtrain("list", "--since", "1h", env=env)
    assert text.returncode == 0 and "alpha-2" in text.stdout and "InProgress" in text.stdout
    assert smtrain("list", "--since", "yesterday-ish", env=env).returncode == 2


def test_logs_merge_hosts_by_time(aws: MotoServer, tmp_path):
    create_job(aws, "job-logs", count=2)
    base = int(time.time() * 1000) - 60_000
    # Written host by host; the reader must interleave them by timestamp.
    aws.put_logs("job-logs", "algo-2", ["b0"], timestamp_ms=base + 5)
    aws.put_logs("job-logs", "algo-2", ["b1"], timestamp_ms=base + 30)
    aws.put_logs("job-logs", "algo-1", ["a0"], timestamp_ms=base + 10)
    aws.put_logs("job-logs", "algo-1", ["a1"], timestamp_ms=base + 20)
    aws.set_status("job-logs", "Completed")
    proc = smtrain("logs", "job-logs", env=aws.env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[algo-2] b0", "[algo-1] a0", "[algo-1] a1", "[algo-2] b1"]

    proc = smtrain("logs", "job-logs", "-o", "json", env=aws.env(tmp_path))
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["message"] for e in events] == ["b0", "a0", "a1", "b1"]
    assert set(events[0]) == {"host", "timestamp", "message"} and events[0]["host"] == "algo-2"
    assert smtrain("logs", "not-a-job", env=aws.env(tmp_path)).returncode == 4
    # A job that has written nothing yet: said, not an empty answer.
    create_job(aws, "job-quiet")
    aws.set_status("job-quiet", "InProgress", "Starting")
    quiet = smtrain("logs", "job-quiet", env=aws.env(tmp_path))
    assert quiet.returncode == 0 and quiet.stdout == ""
    assert quiet.stderr.strip() == "job-quiet has no log lines yet (status InProgress (Starting))"


def test_logs_follow_two_hosts_and_a_stream_that_appears_later(aws: MotoServer, tmp_path):
    create_job(aws, "job-follow", count=3)
    aws.set_status("job-follow", "InProgress", "Training")
    written: list[str] = []

    def write() -> None:
        for i in range(12):
            hosts = ["algo-1", "algo-2"] + (["algo-3"] if i >= 6 else [])  # algo-3 starts late
            for host in hosts:
                message = f"{host} line {len(written):03d}"
                aws.put_logs("job-follow", host, [message])
                written.append(f"[{host}] {message}")
                time.sleep(0.03)
            time.sleep(0.15)
        time.sleep(0.3)
        aws.set_status("job-follow", "Completed")

    proc = _popen(aws, tmp_path, "logs", "job-follow", "--follow")
    time.sleep(1.0)  # the follower is running before anything is written
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    out, err = proc.communicate(timeout=60)
    writer.join(5)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines == written  # every event, each once, in time order across hosts
    assert any(line.startswith("[algo-3]") for line in lines)


def test_wait_exit_codes_and_timeout(aws: MotoServer, tmp_path):
    env = aws.env(tmp_path)
    for name in ("w-ok", "w-fail", "w-stop", "w-slow"):
        create_job(aws, name)
        aws.set_status(name, "InProgress", "Training")
    for name, status, code in (("w-ok", "Completed", 0), ("w-fail", "Failed", 1), ("w-stop", "Stopped", 3)):
        thread = _once_polled(aws, lambda name=name, status=status: aws.set_status(name, status, failure_reason="x"))
        proc = smtrain("wait", name, "-o", "json", env=env)
        thread.join()
        assert proc.returncode == code, proc.stderr
        assert json.loads(proc.stdout)["status"] == status
        assert f"{name}: InProgress (Training)" in proc.stderr

    proc = smtrain("wait", "w-slow", "--timeout", "1s", env=env)
    assert proc.returncode == 124
    assert "smtrain wait w-slow" in proc.stderr and "InProgress" in proc.stdout
    assert aws.job("w-slow").training_job_status == "InProgress"
    assert smtrain("wait", "w-slow", "--timeout", "soon", env=env).returncode == 2


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("command", [("wait",), ("logs", "--follow")], ids=["wait", "logs"])
def test_ctrl_c_or_sigterm_leaves_the_job_running_and_says_how_to_reattach(aws: MotoServer, tmp_path, command,
                                                                           sig, code):
    create_job(aws, "job-int")
    aws.set_status("job-int", "InProgress", "Training")
    aws.put_logs("job-int", "algo-1", ["hello"], timestamp_ms=int(time.time() * 1000) - 10_000)
    proc = _popen(aws, tmp_path, command[0], "job-int", *command[1:], "--region", "us-east-1")
    # Interrupt once the command is in its polling loop (it has printed something).
    stream = proc.stdout if command[0] == "logs" else proc.stderr
    assert stream.readline()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert err.rstrip().endswith("interrupted" if sig == signal.SIGINT else "interrupted (SIGTERM)"), err
    reattach = " ".join(("smtrain", command[0], "job-int", *command[1:], "--region", "us-east-1"))
    assert f"job-int keeps running; reattach with: {reattach}" in err
    assert "Traceback" not in err
    assert aws.job("job-int").training_job_status == "InProgress"
    assert aws.control.count("StopTrainingJob") == 0


def test_stop(aws: MotoServer, tmp_path):
    env = aws.env(tmp_path)
    create_job(aws, "to-stop")
    proc = smtrain("stop", "to-stop", "-o", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "Stopping"
    assert aws.job("to-stop").training_job_status == "Stopping"

    create_job(aws, "stop-wait")
    thread = _once_polled(aws, lambda: aws.set_status("stop-wait", "Stopped"))
    proc = smtrain("stop", "stop-wait", "--wait", env=env)
    thread.join()
    assert proc.returncode == 3, proc.stderr
    assert "Stopped" in proc.stdout

    proc = smtrain("stop", "stop-wait", env=env)  # already ended: nothing to do, not an error
    assert proc.returncode == 0 and "already ended (Stopped)" in proc.stderr
    assert aws.control.count("StopTrainingJob") == 2


def test_jobs_of_the_local_backend_are_found_first(monkeypatch):
    import smtrain.api.backends as backends

    local_job = JobInfo(name="local-1", backend="local", status="Completed")

    class FakeLocal:
        def has(self, name: str) -> bool:
            return name == "local-1"

        def describe(self, name: str) -> JobInfo:
            return local_job

    monkeypatch.setattr(backends, "local_module", lambda: SimpleNamespace(LocalBackend=FakeLocal))
    monkeypatch.setattr(backends, "sagemaker_backend", lambda region, **_: ("sagemaker", region))
    assert backends.backend_for_job("local-1", None).describe("local-1") is local_job
    assert backends.backend_for_job("remote-1", "eu-west-1") == ("sagemaker", "eu-west-1")
    assert isinstance(backends.local_backend(), FakeLocal)

    monkeypatch.setattr(backends, "local_module", lambda: None)
    assert backends.backend_for_job("local-1", "us-east-1") == ("sagemaker", "us-east-1")
    with pytest.raises(backends.UserError):
        backends.local_backend()


def test_lifecycle_help_documents_the_options():
    for command, words in (("status", ["--region", "--output"]), ("list", ["--status", "--name-contains", "--since",
                                                                             "--limit", "--local"]),
                           ("logs", ["--follow"]), ("wait", ["--timeout"]), ("stop", ["--wait"]),
                           ("submit", ["--wait", "--logs"])):
        proc = smtrain(command, "--help")
        assert proc.returncode == 0
        for word in words:
            assert re.search(rf"(^|\s){re.escape(word)}\b", proc.stdout), (command, word)


@pytest.mark.parametrize("command", ["status", "list", "logs", "wait", "stop", "metrics"])
def test_lifecycle_help_imports_nothing_heavy(command):
    proc = subprocess.run([sys.executable, "-c", PROBE % (HEAVY,), command, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert "HEAVY=[]" in proc.stderr, proc.stderr


def test_wait_that_loses_the_endpoint_says_the_job_may_run_on_and_how_to_follow_it(aws: MotoServer, tmp_path):
    create_job(aws, "job-lost")
    aws.set_status("job-lost", "InProgress", "Training")
    proc = _popen(aws, tmp_path, "wait", "job-lost", "--region", "us-east-1")
    assert proc.stderr is not None and "job-lost: InProgress (Training)" in proc.stderr.readline()
    # SageMaker answers the next describe's every attempt with a 500: botocore's attempts run out. Exactly as
    # many as it makes, and none left over: a module that imports the server's fixtures starts a server of
    # its own whose handlers wrap these, so a fault left here would reach its tests.
    aws.control.inject("DescribeTrainingJob", Fault("InternalFailure", "injected 500", status=500),
                       times=DEFAULT_MAX_ATTEMPTS)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        while aws.control.take("DescribeTrainingJob") is not None:
            pass
    assert proc.returncode == 4, err
    assert ("lost contact with AWS while following job-lost, which may still be running; follow it again with: "
            "smtrain wait job-lost --region us-east-1") in err
    assert "Traceback" not in err
