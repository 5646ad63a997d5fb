"""Real submission against a live moto server: `smtrain submit` runs as a subprocess over HTTP.

What is checked at the server: the request the dry run shows is the one SageMaker receives, the
bundle is uploaded once per content, one submission makes one job whatever the network does,
and every AWS failure is one actionable line with exit code 4 and nothing half-made.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from typing import Any

import pytest

from tests.support.cli_runner import running_smtrain, smtrain
from tests.support.moto_server import BUCKET, QUOTA, THROTTLE, Fault, MotoServer, live_spec

# The live server's fixtures (see tests/moto_server.py).

# Each of these runs smtrain as a process against the server (retries, faults): seconds each.
slow = pytest.mark.slow

JOB_NAME_RE = re.compile(r"^test-job-\d{8}-\d{6}-[0-9a-f]{4}$")


def _renamed(value: Any, old: str, new: str) -> Any:
    return json.loads(json.dumps(value).replace(old, new))


def _objects(server: MotoServer) -> list[str]:
    return [o["Key"] for o in server.client("s3").list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def _one_error_line(proc: Any) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


@slow
def test_server_receives_the_dry_run_request_and_the_bundle_once(aws: MotoServer, tmp_path):
    spec = live_spec(tmp_path, {"compute": {"nodes": 2, "instance_type": "ml.g5.12xlarge"},
                                "environment": {"LOG_LEVEL": "debug"}, "tags": {"team": "ml"}})
    env = aws.env(tmp_path)
    dry = smtrain("submit", str(spec), "--dry-run", "--job-name", "dry-run-name", "-o", "json", env=env)
    assert dry.returncode == 0, dry.stderr
    dry = json.loads(dry.stdout)

    first = smtrain("submit", str(spec), "-o", "json", env=env)
    assert first.returncode == 0, first.stderr
    submitted = json.loads(first.stdout)
    name = submitted["job_name"]
    assert JOB_NAME_RE.match(name) and len(name) <= 63
    assert submitted["status"] == "InProgress" and submitted["upload"]["uploaded"] is True
    assert submitted["upload"]["sha256"] == dry["upload"]["sha256"]
    assert submitted["commands"]["logs"] == f"smtrain logs {name} --follow"

    # The request as the server got it equals the dry run's, but for the name and what holds it.
    [received] = aws.control.create_requests
    assert received == _renamed(dry["request"], "dry-run-name", name)
    # TensorBoardOutputConfig included (the default place, beside the output), and DescribeTrainingJob
    # answers with it (moto 5.2.5 keeps it): `smtrain tensorboard` reads it there.
    tensorboard = {"S3OutputPath": f"s3://{BUCKET}/out/tensorboard", "LocalPath": "/opt/ml/output/tensorboard"}
    assert received["TensorBoardOutputConfig"] == tensorboard
    described = aws.client("sagemaker").describe_training_job(TrainingJobName=name)
    assert described["TensorBoardOutputConfig"] == tensorboard

    # Content-addressed: the key carries the hash, S3 holds the hash, and the same code is not sent twice.
    key = f"out/source/{dry['upload']['sha256']}/sourcedir.tar.gz"
    assert _objects(aws) == [key]
    head = aws.client("s3").head_object(Bucket=BUCKET, Key=key)
    assert head["Metadata"]["sha256"] == dry["upload"]["sha256"]
    assert head["ContentLength"] == dry["upload"]["bytes"]
    second = smtrain("submit", str(spec), "-o", "json", env=env)
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["upload"]["uploaded"] is False and again["job_name"] != name
    assert aws.control.count("PutObject") == 1
    assert aws.control.create_requests[1] == _renamed(received, name, again["job_name"])
    assert sorted(aws.jobs()) == sorted([name, again["job_name"]])


SHA256 = re.compile(r"/source/[0-9a-f]{64}/")


def _sha256_masked(request: dict[str, Any]) -> dict[str, Any]:
    """The request with the bundle's sha256 (in its S3 key) masked wherever it appears."""
    return json.loads(SHA256.sub("/source/<sha256>/", json.dumps(request)))


def test_the_server_receives_exactly_the_dry_run_request_under_the_same_name(aws: MotoServer, tmp_path):
    # submit = send(the dry run's value): the same --job-name for both, and the body the server received equals
    # the dry run's `request` field by field, but for the bundle's sha256 (README: names and the sha256 aside).
    from tests.render.test_sdk_oracle import differences

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helpers.py").write_text("X = 1\n")
    spec = live_spec(tmp_path, {
        "compute": {"nodes": 2, "instance_type": "ml.g5.12xlarge", "spot": True, "max_run": "2h", "max_wait": "3h",
                    "max_retry_attempts": 1, "remote_debug": True, "infra_check": True},
        "output_compression": False, "session_tag_chaining": True,
        "model_package": {"group": "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/mnist"},
        "model_uri": f"s3://{BUCKET}/models/m.tar.gz", "checkpoint_local_path": "/opt/ml/ck",
        "tracking": {"mlflow": "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team",
                     "experiment": "mnist", "run": "first", "sagemaker_experiment": {"experiment": "mnist-exp"}},
        "code": {"dependencies": ["lib"]},
        "environment": {"LOG_LEVEL": "debug"}, "tags": {"team": "ml"}, "checkpoints": f"s3://{BUCKET}/ck",
        "inputs": {"train": {"uri": f"s3://{BUCKET}/train", "mode": "FastFile"}, "eval": f"s3://{BUCKET}/eval",
                   "shared": {"file_system": {"id": "fs-0123456789abcdef0", "type": "FSxLustre",
                                              "directory": "/abcdefgh/data"}}},
        "network": {"subnets": ["subnet-0abc1234"], "security_groups": ["sg-0abc1234"], "isolation": True}})
    env = aws.env(tmp_path)
    dry = smtrain("submit", str(spec), "--dry-run", "--job-name", "same-name-1", "-o", "json", env=env)
    assert dry.returncode == 0, dry.stderr
    assert aws.control.calls == []  # the dry run is offline
    dry = json.loads(dry.stdout)
    sent = smtrain("submit", str(spec), "--job-name", "same-name-1", "-o", "json", env=env)
    assert sent.returncode == 0, sent.stderr
    sent = json.loads(sent.stdout)
    [received] = aws.control.create_requests
    assert differences(_sha256_masked(received), _sha256_masked(dry["request"])) == []
    assert list(received) == list(dry["request"])  # the same members, in the same order
    assert {"RemoteDebugConfig", "InfraCheckConfig", "SessionChainingConfig", "ModelPackageConfig", "MlflowConfig",
            "ExperimentConfig"} <= set(received)
    described = aws.client("sagemaker").describe_training_job(TrainingJobName="same-name-1")
    assert described["MlflowConfig"] == received["MlflowConfig"], described
    assert described["ExperimentConfig"] == {"ExperimentName": "mnist-exp"}, described
    assert received["OutputDataConfig"]["CompressionType"] == "NONE"
    assert [c["ChannelName"] for c in received["InputDataConfig"]] == ["train", "eval", "shared", "model", "code"]
    assert received["CheckpointConfig"]["LocalPath"] == received["Environment"]["SMTRAIN_CHECKPOINT_DIR"]
    # The sha256 the request names is the bundle uploaded (the code channel, with network isolation).
    code = [c for c in received["InputDataConfig"] if c["ChannelName"] == "code"]
    assert code[0]["DataSource"]["S3DataSource"]["S3Uri"] == sent["upload"]["uri"]
    assert _objects(aws) == [sent["upload"]["uri"].split("/", 3)[3]]


@slow
def test_throttling_is_retried(aws: MotoServer, tmp_path):
    aws.control.inject("DescribeTrainingJob", THROTTLE, times=2)  # botocore's standard mode retries it
    aws.control.inject("CreateTrainingJob", THROTTLE, times=3)  # smtrain retries it (never blindly)
    proc = smtrain("submit", str(live_spec(tmp_path)), "--job-name", "throttled", env=aws.env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert aws.jobs() == ["throttled"]
    assert aws.control.count("CreateTrainingJob") == 4


@slow
def test_create_timing_out_on_the_client_makes_one_job(aws: MotoServer, tmp_path):
    # The server creates the job, then answers after the client has given up waiting.
    aws.control.inject("CreateTrainingJob", Fault(delay_after=4))
    proc = smtrain("submit", str(live_spec(tmp_path)), "--job-name", "slow-create", "-o", "json",
                   env=aws.env(tmp_path, SMTRAIN_API_TIMEOUT="1.5"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["job_name"] == "slow-create"
    assert aws.jobs() == ["slow-create"]
    assert aws.control.count("CreateTrainingJob") == 1  # described, not sent again


@slow
def test_a_name_in_use_is_refused_before_anything_is_sent(aws: MotoServer, tmp_path):
    env = aws.env(tmp_path)
    assert smtrain("submit", str(live_spec(tmp_path)), "--job-name", "taken", env=env).returncode == 0
    puts = aws.control.count("PutObject")
    proc = smtrain("submit", str(live_spec(tmp_path, {"training": {"epochs": 99}})), "--job-name", "taken", env=env)
    assert proc.returncode == 4
    assert "already exists" in _one_error_line(proc)
    assert aws.control.count("PutObject") == puts and aws.control.count("CreateTrainingJob") == 1
    # The harness's own ResourceInUse, which AWS answers to a duplicate create.
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError) as info:
        aws.client("sagemaker").create_training_job(**aws.control.create_requests[0])
    assert info.value.response["Error"]["Code"] == "ResourceInUse"


# (fault at the server, env changes, spec changes, words the one error line must hold, sent anything?)
FAILURES = [
    pytest.param({"CreateTrainingJob": QUOTA}, {}, {}, ("ResourceLimitExceeded", "Service Quotas"), "uploaded",
                 id="quota", marks=slow),
    pytest.param({"CreateTrainingJob": Fault("ValidationException", "Instance type is not supported")}, {}, {},
                 ("SageMaker rejected the request", "Instance type is not supported"), "uploaded",
                 id="validation", marks=slow),
    pytest.param({"DescribeTrainingJob": Fault("AccessDeniedException", "User: arn:aws:iam::123456789012:user/ci "
                                               "is not authorized to perform: sagemaker:DescribeTrainingJob")},
                 {}, {}, ("access denied", "sagemaker:DescribeTrainingJob"), "nothing", id="access-denied"),
    pytest.param({"PutObject": Fault("AccessDenied", "Access Denied")}, {}, {},
                 ("upload the source bundle", "access denied"), "nothing", id="upload-fails", marks=slow),
    pytest.param({}, {}, {"output": "s3://no-such-bucket-here/out"}, ("bucket does not exist",), "nothing",
                 id="no-bucket", marks=slow),
    pytest.param({}, {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": ""}, {},
                 ("no AWS credentials",), "nothing", id="no-credentials"),
    # An image of one's own: without it, validate already refuses a region the SDK has no image in (exit 2).
    pytest.param({}, {}, {"region": "xx-nowhere-9", "tensorflow": {"image_uri": "registry.example/tf:2.19"}},
                 ("unknown AWS region 'xx-nowhere-9'",), "nothing", id="unknown-region"),
]


@pytest.mark.parametrize(("faults", "env_changes", "spec_changes", "words", "sent"), FAILURES)
def test_api_failures_are_one_line_exit_4_and_leave_no_job(aws: MotoServer, tmp_path, faults, env_changes,
                                                           spec_changes, words, sent):
    for operation, fault in faults.items():
        aws.control.inject(operation, fault)
    proc = smtrain("submit", str(live_spec(tmp_path, spec_changes)), "--job-name", "fails",
                   env=aws.env(tmp_path, **env_changes))
    assert proc.returncode == 4, proc.stderr
    line = _one_error_line(proc)
    for word in words:
        assert word in line
    assert proc.stdout == ""
    assert aws.jobs() == []
    if sent == "nothing":
        assert aws.control.count("CreateTrainingJob") == 0 and _objects(aws) == []


def _finish_when_created(server: MotoServer, name: str, status: str, logs: list[tuple[str, str]],
                         reason: str | None = None) -> threading.Thread:
    """In the background: once job `name` exists, write its logs and end it with `status`."""

    def run() -> None:
        deadline = time.monotonic() + 60
        while name not in server.jobs() and time.monotonic() < deadline:
            time.sleep(0.1)
        server.set_status(name, "InProgress", "Training")
        for host, message in logs:
            server.put_logs(name, host, [message])
            time.sleep(0.05)
        time.sleep(0.5)
        server.set_status(name, status, failure_reason=reason)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@slow
def test_submit_wait_logs_streams_until_the_job_completes(aws: MotoServer, tmp_path):
    thread = _finish_when_created(aws, "with-logs", "Completed",
                                  [("algo-1", "epoch=1 loss=0.5"), ("algo-2", "epoch=1 loss=0.6")])
    proc = smtrain("submit", str(live_spec(tmp_path)), "--job-name", "with-logs", "--wait", "--logs",
                   env=aws.env(tmp_path))
    thread.join(5)
    assert proc.returncode == 0, proc.stderr
    assert "[algo-1] epoch=1 loss=0.5\n[algo-2] epoch=1 loss=0.6\n" in proc.stdout
    assert "Completed" in proc.stdout and "created training job with-logs" in proc.stderr


@slow
def test_submit_wait_exits_with_the_job_status(aws: MotoServer, tmp_path):
    thread = _finish_when_created(aws, "will-fail", "Failed", [], reason="AlgorithmError: out of memory")
    proc = smtrain("submit", str(live_spec(tmp_path)), "--job-name", "will-fail", "--wait", "-o", "json",
                   env=aws.env(tmp_path))
    thread.join(5)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "Failed" and data["job"]["failure_reason"] == "AlgorithmError: out of memory"
    assert data["upload"]["uploaded"] is True


def test_a_bad_job_name_is_a_usage_error_before_any_call(aws: MotoServer, tmp_path):
    proc = smtrain("submit", str(live_spec(tmp_path)), "--job-name", "no_underscores!", env=aws.env(tmp_path))
    assert proc.returncode == 2
    assert "invalid job name 'no_underscores!'" in _one_error_line(proc)
    assert aws.control.calls == []


@slow
def test_two_same_name_submits_with_a_lost_answer_never_both_claim_the_job(aws: MotoServer, tmp_path):
    """Submit A's CreateTrainingJob is held at the server; meanwhile submit B (other hyperparameters) takes the
    name; then A's create fails with a 500 (an answer that could have been lost after the work). A finds a job
    under its name that is not its request: exit 4 saying so, not "created" with B's job. B keeps its job."""
    held, arrived = threading.Event(), threading.Event()
    aws.control.inject("CreateTrainingJob", Fault("InternalFailure", "injected 500", status=500, hold=held,
                                                  arrived=arrived))
    env = aws.env(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    result: dict[str, Any] = {}
    # Two commands at once: each its own process (in-process commands share one sys.stdout).
    first = threading.Thread(target=lambda: result.setdefault("a", smtrain(
        "submit", str(live_spec(tmp_path / "a")), "--job-name", "race", "-o", "json", env=env, process=True)))
    first.start()
    try:
        assert arrived.wait(60), "submit A's create never reached the server"
        second = smtrain("submit", str(live_spec(tmp_path / "b", {"training": {"epochs": 99}})), "--job-name", "race",
                         "-o", "json", env=env, process=True)
        assert second.returncode == 0, second.stderr
    finally:
        held.set()
        first.join(120)
    a = result["a"]
    assert a.returncode == 4, (a.stdout, a.stderr)
    assert ("a training job named race exists and is not this submit's (its HyperParameters differs from what this "
            "submit sent)") in a.stderr
    assert a.stdout.strip() == "" or "race" not in json.loads(a.stdout).get("job_name", "")
    assert aws.jobs() == ["race"]
    assert aws.control.count("CreateTrainingJob") == 2  # A's, once (not resent), and B's


def test_sigterm_during_the_upload_is_an_interrupt_that_creates_no_job(aws: MotoServer, tmp_path):
    """A CI runner cancelling the step while the code uploads: exit 143 "interrupted (SIGTERM)", no traceback,
    no CreateTrainingJob, the bundle's temporary files gone."""
    held, arrived = threading.Event(), threading.Event()
    aws.control.inject("PutObject", Fault(hold=held, arrived=arrived))
    temp = tmp_path / "tmp"
    temp.mkdir()
    with running_smtrain("submit", str(live_spec(tmp_path)), "--job-name", "cut-short",
                         env={**aws.env(tmp_path), "TMPDIR": str(temp)}) as proc:
        try:
            assert arrived.wait(60), "the upload never reached the server"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            held.set()  # the server's thread goes on
    assert proc.returncode == 143, err
    assert err.rstrip().splitlines()[-1] == "interrupted (SIGTERM)" and "Traceback" not in err, err
    assert out == ""
    assert aws.control.count("CreateTrainingJob") == 0 and aws.jobs() == []
    assert list(temp.iterdir()) == []
