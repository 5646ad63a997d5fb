"""A live AWS stand-in for tests: moto as a real HTTP server on 127.0.0.1, plus what moto lacks.

`smtrain` runs as a subprocess against it (``AWS_ENDPOINT_URL``), so every request crosses a real
socket and botocore's retries, timeouts and error parsing all run as they would against AWS.

moto 5.2.5's SageMaker model is thin. :func:`install` patches its classes in this process (the
threaded server serves from them) to add, each marked "moto lacks" below:

* ResourceInUse when CreateTrainingJob names a job that exists (moto overwrites it silently);
* StopTrainingJob (moto does not implement it: InProgress -> Stopping, the test then decides);
* jobs that start InProgress and change state only when a test says so (moto makes every job
  Completed at creation): :meth:`MotoServer.set_status`;
* ``OutputDataConfig.KmsKeyId`` in DescribeTrainingJob (AWS always returns it, the SDK reads it);
* ``Environment`` in DescribeTrainingJob (moto drops it at creation), and RetryStrategy, ProfilerConfig and the
  other members of DESCRIBED_AS_CREATED;
* a record of every CreateTrainingJob body exactly as received (:attr:`Control.create_requests`);
* hyperparameter tuning jobs that start InProgress, scripted trials, Stop and
  ListTrainingJobsForHyperParameterTuningJob, the received create body (tests/support/moto_tuning.py);
* faults, queued per operation (:meth:`Control.inject`): an AWS error (throttling, quota, access
  denied...), or an answer held back after the work is done, longer than the client's read
  timeout; S3 PutObject and GetObject faults too.

CloudWatch Logs needs nothing added: moto keeps groups, streams and events with forward tokens.
Service Quotas for SageMaker (moto has none): tests/support/moto_quotas.py, set through
``control.quotas``. Billable and training seconds (moto's DescribeTrainingJob has neither):
:meth:`MotoServer.set_billing`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import logging
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from moto.cloudwatch.responses import CloudWatchResponse
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.exceptions import JsonRESTError
from moto.core.responses import EmptyResult
from moto.s3.exceptions import S3ClientError
from moto.s3.models import S3Backend
from moto.sagemaker import models as sm_models
from moto.sagemaker.responses import SageMakerResponse
from moto.server import ThreadedMotoServer

from tests.support.moto_quotas import Quotas
from tests.support.moto_quotas import patches as quota_patches

REGION = "us-east-1"
BUCKET = "smtrain-test-bucket"
ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
# Obviously fake credentials: tests search all output for them.
CANARY_ACCESS_KEY = "AKIACANARY0000000000"
CANARY_SECRET_KEY = "canary-secret-key-never-print-0000000000"
CANARY_SESSION_TOKEN = "canary-session-token-never-print-000000"


@dataclass(frozen=True)
class Fault:
    """What the server does instead of (or after) answering one request."""

    code: str | None = None  # AWS error code to answer with, e.g. "ThrottlingException"
    message: str = "injected by the test harness"
    status: int = 400
    delay_after: float = 0.0  # do the work, then hold the answer this long (the client times out)
    # Hold the request, before any work, until the test sets this (it gets `arrived` when the request is in):
    # a race made deterministic, e.g. another submit that takes the name meanwhile.
    hold: threading.Event | None = field(default=None, compare=False)
    arrived: threading.Event | None = field(default=None, compare=False)

    def wait_if_held(self) -> None:
        if self.hold is not None:
            if self.arrived is not None:
                self.arrived.set()
            self.hold.wait(120)

    def raise_error(self, s3: bool = False) -> None:
        if self.code is None:
            return
        if s3:
            raise S3ClientError(self.code, self.message)  # moto takes the HTTP status from S3's model
        err = JsonRESTError(self.code, self.message)
        err.code = self.status
        raise err


THROTTLE = Fault("ThrottlingException", "Rate exceeded")
QUOTA = Fault("ResourceLimitExceeded", "The account-level service limit 'ml.g5.xlarge for training job "
                                       "usage' is 0 Instances, with current utilization of 0 Instances.")


class Control:
    """What a test arranges and observes on the server side."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[str, list[Fault]] = defaultdict(list)
        self.create_requests: list[dict[str, Any]] = []  # CreateTrainingJob bodies, as received
        self.tuning_requests: list[dict[str, Any]] = []  # CreateHyperParameterTuningJob bodies (moto_tuning)
        self.calls: list[str] = []  # every patched operation received, in order
        self.quotas = Quotas()  # Service Quotas' SageMaker quotas (moto lacks them)
        # Names whose create handler has finished, harness edits included: a test thread that acts on a
        # job the command under test creates waits for this, not for the name to appear in moto's dict.
        self._created: dict[str, threading.Event] = defaultdict(threading.Event)

    def inject(self, operation: str, fault: Fault, times: int = 1) -> None:
        """The next `times` requests of `operation` (e.g. "CreateTrainingJob", "PutObject") get `fault`."""
        with self._lock:
            self._faults[operation] += [fault] * times

    def take(self, operation: str, record: bool = True) -> Fault | None:
        with self._lock:
            if record:
                self.calls.append(operation)
            queue = self._faults.get(operation)
            return queue.pop(0) if queue else None

    def mark_created(self, name: str) -> None:
        with self._lock:
            event = self._created[name]
        event.set()

    def wait_created(self, name: str, timeout: float = 60.0) -> bool:
        with self._lock:
            event = self._created[name]
        return event.wait(timeout)

    def count(self, operation: str) -> int:
        with self._lock:
            return self.calls.count(operation)

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self.create_requests.clear()
            self.tuning_requests.clear()
            self.calls.clear()
            self._created.clear()
        self.quotas.reset()


# CreateTrainingJob members DescribeTrainingJob answers with (botocore's DescribeTrainingJobResponse) that moto
# does not keep.
DESCRIBED_AS_CREATED = ("RetryStrategy", "ProfilerConfig", "ProfilerRuleConfigurations", "RemoteDebugConfig",
                        "InfraCheckConfig", "ModelPackageConfig", "MlflowConfig")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _backend(region: str = REGION) -> Any:
    return sm_models.sagemaker_backends[DEFAULT_ACCOUNT_ID][region]


def _patches(control: Control) -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement) for every patch; originals are restored after the session."""
    backend_cls = sm_models.SageMakerModelBackend
    original_create = backend_cls.create_training_job

    def create_training_job(self: Any, training_job_name: str, **kwargs: Any) -> Any:
        # moto lacks: AWS refuses a second job with a name in use.
        if training_job_name in self.training_jobs:
            arn = sm_models.FakeTrainingJob.arn_formatter(training_job_name, self.account_id, self.region_name)
            raise JsonRESTError("ResourceInUse", f"Training job names must be unique within an AWS account and "
                                                 f"region, and a training job with this name already exists ({arn})")
        job = original_create(self, training_job_name=training_job_name, **kwargs)
        # moto lacks: a job starts InProgress and changes only when the test says (set_status).
        job.training_job_status = "InProgress"
        job.secondary_status = "Starting"
        job.training_start_time = None
        job.training_end_time = None
        job.failure_reason = None
        # moto lacks: describe always carries OutputDataConfig.KmsKeyId ("" when none was given).
        job.output_data_config = {**job.output_data_config, "KmsKeyId": job.output_data_config.get("KmsKeyId", "")}
        return job

    def stop_training_job_model(self: Any, training_job_name: str) -> None:
        # moto lacks: StopTrainingJob. AWS moves InProgress to Stopping and refuses ended jobs.
        job = self.training_jobs.get(training_job_name)
        if job is None:
            arn = sm_models.FakeTrainingJob.arn_formatter(training_job_name, self.account_id, self.region_name)
            raise sm_models.ValidationError(message=f"Could not find training job '{arn}'.")
        if job.training_job_status != "InProgress":
            raise JsonRESTError("ValidationException", "The request was rejected because the training job is "
                                                       f"in status {job.training_job_status}.")
        job.training_job_status = job.secondary_status = "Stopping"
        job.last_modified_time = _now()

    def stop_training_job_response(self: Any) -> Any:
        self.sagemaker_backend.stop_training_job(self._get_param("TrainingJobName"))
        return EmptyResult()

    def with_faults(operation: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def handler(self: Any) -> Any:
            fault = control.take(operation)
            if fault:
                fault.wait_if_held()
            if operation == "CreateTrainingJob":
                # The body as botocore sent it (moto rewrites parts of what it stores).
                control.create_requests.append(json.loads(self.body))
            if fault:
                fault.raise_error()
            result = method(self)
            if operation == "CreateTrainingJob":
                # moto lacks: DescribeTrainingJob answers with the job's Environment, as AWS does.
                body = control.create_requests[-1]
                self.sagemaker_backend.training_jobs[body["TrainingJobName"]].environment = body.get("Environment")
                # moto lacks: the job's own MetricDefinitions (it puts a made-up one in their place), and no
                # FinalMetricDataList before the job has ended (tests/support/moto_metrics.py sets it).
                job = self.sagemaker_backend.training_jobs[body["TrainingJobName"]]
                job.algorithm_specification = body["AlgorithmSpecification"]
                job.final_metric_data_list = []
                job.described_extra = {k: body[k] for k in DESCRIBED_AS_CREATED if k in body}
                control.mark_created(body["TrainingJobName"])
            if fault and fault.delay_after:
                time.sleep(fault.delay_after)
            return result

        return handler

    original_put = S3Backend.put_object

    def put_object(self: Any, *args: Any, **kwargs: Any) -> Any:
        fault = control.take("PutObject")
        if fault:
            fault.wait_if_held()
            fault.raise_error(s3=True)
        return original_put(self, *args, **kwargs)

    original_get = S3Backend.get_object

    def get_object(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Not recorded in `calls`: moto answers HeadObject through this method too, which would count as a GET.
        fault = control.take("GetObject", record=False)
        if fault:
            fault.wait_if_held()
            fault.raise_error(s3=True)
        return original_get(self, *args, **kwargs)

    original_response = sm_models.FakeTrainingJob.response_object

    def response_object(self: Any) -> dict[str, Any]:
        response = original_response.fget(self)
        # moto lacks: these members of the create request in DescribeTrainingJob's answer, as AWS gives them.
        for key, value in getattr(self, "described_extra", {}).items():
            response.setdefault(key, value)
        return response

    patches: list[tuple[Any, str, Any]] = [
        (sm_models.FakeTrainingJob, "response_object", property(response_object)),
        (backend_cls, "create_training_job", create_training_job),
        (backend_cls, "stop_training_job", stop_training_job_model),
        (SageMakerResponse, "stop_training_job", stop_training_job_response),
        (S3Backend, "put_object", put_object),
        (S3Backend, "get_object", get_object),
    ]
    for operation, attr in (("CreateTrainingJob", "create_training_job"),
                            ("DescribeTrainingJob", "describe_training_job"),
                            ("ListTrainingJobs", "list_training_jobs"),
                            ("StopTrainingJob", "stop_training_job")):
        method = stop_training_job_response if attr == "stop_training_job" else getattr(SageMakerResponse, attr)
        patches.append((SageMakerResponse, attr, with_faults(operation, method)))
    # CloudWatch's GetMetricData can fail too (AccessDenied, throttling): faults as for SageMaker's calls.
    patches.append((CloudWatchResponse, "get_metric_data", with_faults("GetMetricData",
                                                                       CloudWatchResponse.get_metric_data)))
    from tests.support import moto_tuning  # what moto lacks for tuning jobs (it imports this module)

    return patches + quota_patches(control.quotas, control.take) + moto_tuning.patches(control)


@contextlib.contextmanager
def install(control: Control) -> Iterator[None]:
    """Apply the patches (moto serves from these classes), undo them afterwards."""
    saved = []
    for owner, attr, replacement in _patches(control):
        saved.append((owner, attr, owner.__dict__.get(attr)))
        setattr(owner, attr, replacement)
    try:
        yield
    finally:
        for owner, attr, original in reversed(saved):
            if original is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)


class MotoServer:
    """A running server, its control panel, and the environment that points smtrain at it."""

    def __init__(self, url: str, control: Control) -> None:
        self.url = url
        self.control = control

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """Environment for an smtrain subprocess: this server, canary credentials, a bare HOME."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": CANARY_ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": CANARY_SECRET_KEY,
            "AWS_SESSION_TOKEN": CANARY_SESSION_TOKEN,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
            "HOME": str(home),
            "SMTRAIN_HOME": str(home / ".smtrain"),  # no local-backend jobs of the person running the tests
            "SMTRAIN_POLL_SECONDS": "0.2",
            **extra,
        }

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=REGION, endpoint_url=self.url,
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def reset(self) -> None:
        """Forget every bucket, job and log (moto's own reset), faults and records; recreate the bucket."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        urllib.request.urlopen(request, timeout=10).close()
        self.control.reset()
        self.client("s3").create_bucket(Bucket=BUCKET)

    # --- the test's hand on job state (moto lacks status changes) --------------------------

    def job(self, name: str) -> Any:
        return _backend().training_jobs[name]

    def jobs(self) -> list[str]:
        return list(_backend().training_jobs)

    def set_billing(self, name: str, *, billable: int, training: int) -> None:
        """moto lacks: BillableTimeInSeconds and TrainingTimeInSeconds, which AWS reports once a job ends."""
        job = self.job(name)
        job.billable_time_in_seconds, job.training_time_in_seconds = billable, training

    def set_status(self, name: str, status: str, secondary: str | None = None,
                   failure_reason: str | None = None) -> None:
        """Move job `name` to `status` (InProgress, Completed, Failed, Stopping, Stopped)."""
        job = self.job(name)
        now = _now()
        job.training_job_status = status
        job.secondary_status = secondary or {"InProgress": "Training"}.get(status, status)
        if status == "InProgress" and job.training_start_time is None:
            job.training_start_time = now
        if status in ("Completed", "Failed", "Stopped"):
            job.training_start_time = job.training_start_time or now
            job.training_end_time = now
        job.failure_reason = failure_reason
        job.last_modified_time = now

    def put_logs(self, job: str, host: str, messages: list[str], *, epoch: int = 1700000000,
                 timestamp_ms: int | None = None) -> str:
        """Write `messages` to the job's CloudWatch stream for `host` (created when missing)."""
        logs = self.client("logs")
        group, stream = "/aws/sagemaker/TrainingJobs", f"{job}/{host}-{epoch}"
        with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
            logs.create_log_group(logGroupName=group)
        with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
            logs.create_log_stream(logGroupName=group, logStreamName=stream)
        ms = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        logs.put_log_events(logGroupName=group, logStreamName=stream,
                            logEvents=[{"timestamp": ms, "message": m} for m in messages])
        return stream


@contextlib.contextmanager
def running() -> Iterator[MotoServer]:
    """Patch moto, start it on a free port of 127.0.0.1, stop and unpatch afterwards."""
    control = Control()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log line per request
    with install(control):
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            yield MotoServer(f"http://{host}:{port}", control)
        finally:
            server.stop()


# --- pytest fixtures (tests/conftest.py registers them for every module) -----------------------

_started: list[MotoServer] = []  # the session's server, once a test has asked for it


@pytest.fixture(scope="session")
def moto_session() -> Iterator[MotoServer]:
    with running() as server:
        _started.append(server)
        yield server
        _started.clear()


@pytest.fixture(scope="module", autouse=True)
def _moto_reset_after_module() -> Iterator[None]:
    """Between modules the session's server is emptied and its faults drained, whatever a module's tests left."""
    yield
    for server in _started:
        server.reset()


@pytest.fixture
def aws(moto_session: MotoServer) -> MotoServer:
    """The live server, emptied for this test, with its bucket."""
    moto_session.reset()
    return moto_session


def live_spec(directory: Path, changes: dict[str, Any] | None = None, name: str = "job.yaml") -> Path:
    """A small job spec whose buckets exist on the server."""
    from tests.support.specfiles import merged, write_spec

    base = {"compute": {"instance_type": "ml.g5.xlarge"}, "inputs": {"train": f"s3://{BUCKET}/train"},
            "output": f"s3://{BUCKET}/out", "role": ROLE}
    return write_spec(directory, merged(base, changes or {}), name=name)


def create_job(server: MotoServer, name: str, *, instance_type: str = "ml.g5.xlarge", count: int = 1,
               algorithm: dict[str, Any] | None = None, **fields: Any) -> None:
    """A training job made directly on the server (for lifecycle tests that need no submit); `algorithm` adds
    to its AlgorithmSpecification (MetricDefinitions...), `fields` are more CreateTrainingJob members
    (TensorBoardOutputConfig...)."""
    server.client("sagemaker").create_training_job(
        TrainingJobName=name, RoleArn=ROLE,
        AlgorithmSpecification={"TrainingImage": "123.dkr.ecr.us-east-1.amazonaws.com/tf:2.19",
                                "TrainingInputMode": "File", **(algorithm or {})},
        OutputDataConfig={"S3OutputPath": f"s3://{BUCKET}/out"},
        ResourceConfig={"InstanceType": instance_type, "InstanceCount": count, "VolumeSizeInGB": 30},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
        **fields,
    )
