"""The parts of a real submit, in process and fast: the never-twice create, the content-addressed
upload, the botocore settings, masking, and the small parsers the commands use."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, ReadTimeoutError

from smtrain import aws as aws_calls
from smtrain import exit_codes
from smtrain.bundle.model import Bundle
from smtrain.errors import AwsError, UserError
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.sagemaker import submit as submission
from smtrain.sagemaker.create import create_training_job
from smtrain.sagemaker.upload import SHA256_METADATA, upload_bundle, want_progress_bar
from smtrain.spec.model import load_spec
from smtrain.spec.units import parse_since
from tests.support import moto_server
from tests.support.moto_server import BUCKET, THROTTLE, Fault, MotoServer, live_spec


def _client_error(code: str, status: int = 400, message: str = "") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "CreateTrainingJob")


class FakeSageMaker:
    """Answers CreateTrainingJob from a script of outcomes; knows which jobs "exist"."""

    def __init__(self, *outcomes: Any, exists_after: int | None = None) -> None:
        self.outcomes = list(outcomes)
        self.creates = 0
        self.describes = 0
        self.exists_after = exists_after  # the job exists once this many creates reached "the server"

    def create_training_job(self, **request: Any) -> dict:
        self.creates += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return {"TrainingJobArn": "arn:job"}

    def describe_training_job(self, TrainingJobName: str) -> dict:  # noqa: N803 (boto3's spelling)
        self.describes += 1
        if self.exists_after is not None and self.creates >= self.exists_after:
            return {"TrainingJobArn": "arn:job"}
        raise _client_error("ValidationException", message="Requested resource not found.")


REQUEST = {"TrainingJobName": "job-1"}
TIMEOUT = ReadTimeoutError(endpoint_url="http://sagemaker")


def test_create_retries_throttling_without_asking():
    sm = FakeSageMaker(_client_error("ThrottlingException"), _client_error("ThrottlingException"), None)
    outcome = create_training_job(sm, sm, REQUEST, sleep=lambda s: None)
    assert (sm.creates, sm.describes, outcome.confirmed_by_describe, outcome.attempts) == (3, 0, False, 3)


def test_create_that_timed_out_but_happened_is_not_sent_again():
    sm = FakeSageMaker(TIMEOUT, exists_after=1)
    outcome = create_training_job(sm, sm, REQUEST, sleep=lambda s: None)
    assert (sm.creates, sm.describes, outcome.confirmed_by_describe, outcome.arn) == (1, 1, True, "arn:job")
    assert outcome.attempts == 1


def test_create_that_timed_out_and_did_not_happen_is_sent_again():
    sm = FakeSageMaker(TIMEOUT, None)
    outcome = create_training_job(sm, sm, REQUEST, sleep=lambda s: None)
    assert (sm.creates, sm.describes, outcome.confirmed_by_describe, outcome.attempts) == (2, 1, False, 2)


def test_resource_in_use_after_a_lost_answer_means_ours():
    # A 5xx whose job was not visible yet; the resend finds the name taken: the first one got through.
    sm = FakeSageMaker(_client_error("InternalFailure", 500), _client_error("ResourceInUse"), exists_after=2)
    outcome = create_training_job(sm, sm, REQUEST, sleep=lambda s: None)
    assert (sm.creates, outcome.confirmed_by_describe, outcome.attempts) == (2, True, 2)


def test_attempts_count_the_throttled_and_the_lost_ones_alike():
    throttle = _client_error("ThrottlingException")
    for throttled in (1, 2):  # then one got through, its answer lost
        found = FakeSageMaker(*[throttle] * throttled, TIMEOUT, exists_after=throttled + 1)
        assert create_training_job(found, found, REQUEST, sleep=lambda s: None).attempts == throttled + 1
    taken = FakeSageMaker(throttle, _client_error("InternalFailure", 500), _client_error("ResourceInUse"),
                          exists_after=3)
    outcome = create_training_job(taken, taken, REQUEST, sleep=lambda s: None)
    assert (outcome.attempts, outcome.confirmed_by_describe) == (3, True)


def test_the_backoff_doubles_from_half_a_second_to_20_seconds_with_full_jitter(monkeypatch):
    import random

    monkeypatch.setattr(random, "uniform", lambda low, high: (low, high))  # each wait's range, as drawn from
    waits: list[Any] = []
    throttle = _client_error("ThrottlingException")
    sm = FakeSageMaker(*[throttle] * 7, None)
    create_training_job(sm, sm, REQUEST, sleep=waits.append)
    assert waits == [(0, 0.5), (0, 1.0), (0, 2.0), (0, 4.0), (0, 8.0), (0, 16.0), (0, 20.0)]


@pytest.mark.parametrize("status, ambiguous", [(499, False), (500, True), (503, True)])
def test_a_server_error_may_have_made_the_job_a_client_error_not(status, ambiguous):
    sm = FakeSageMaker(_client_error("SomeError", status), exists_after=1)
    if ambiguous:
        assert create_training_job(sm, sm, REQUEST, sleep=lambda s: None).confirmed_by_describe
    else:
        with pytest.raises(ClientError):
            create_training_job(sm, sm, REQUEST, sleep=lambda s: None)
    assert sm.describes == (1 if ambiguous else 0)


def test_create_errors_that_are_not_ambiguous_are_raised_at_once():
    for error in (_client_error("ResourceInUse"), _client_error("ResourceLimitExceeded"),
                  EndpointConnectionError(endpoint_url="http://sagemaker")):
        sm = FakeSageMaker(error)
        with pytest.raises(type(error)):
            create_training_job(sm, sm, REQUEST, sleep=lambda s: None)
        assert (sm.creates, sm.describes) == (1, 0)


def test_create_gives_up_when_the_outcome_cannot_be_known():
    class Unreachable(FakeSageMaker):
        def describe_training_job(self, TrainingJobName: str) -> dict:  # noqa: N803
            raise EndpointConnectionError(endpoint_url="http://sagemaker")

    sm = Unreachable(TIMEOUT)
    with pytest.raises(UserError, match="smtrain status job-1"):
        create_training_job(sm, sm, REQUEST, sleep=lambda s: None)
    assert sm.creates == 1


def _bundle(data: bytes) -> Bundle:
    return Bundle(data=data, sha256=hashlib.sha256(data).hexdigest(), files=())


def test_upload_is_content_addressed_and_verified(aws: MotoServer, capsys):
    s3 = aws.client("s3")
    bundle = _bundle(b"not really a tarball")
    uri = f"s3://{BUCKET}/out/source/{bundle.sha256}/sourcedir.tar.gz"
    first = upload_bundle(s3, bundle, uri, progress=True)
    assert first.uploaded and first.to_dict() == {"uri": uri, "sha256": bundle.sha256, "bytes": 20, "uploaded": True}
    head = s3.head_object(Bucket=BUCKET, Key=uri.split("/", 3)[3], ChecksumMode="ENABLED")
    assert head["Metadata"][SHA256_METADATA] == bundle.sha256
    assert upload_bundle(s3, bundle, uri).uploaded is False
    assert aws.control.count("PutObject") == 1
    # Something else at the key (truncated, or another tool's): replaced.
    s3.upload_fileobj(io.BytesIO(b"short"), BUCKET, uri.split("/", 3)[3])
    assert upload_bundle(s3, bundle, uri).uploaded is True
    assert s3.get_object(Bucket=BUCKET, Key=uri.split("/", 3)[3])["Body"].read() == bundle.data


def test_progress_bar_only_for_a_person_at_a_terminal(monkeypatch):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.delenv("CI", raising=False)
    assert want_progress_bar("text")
    assert not want_progress_bar("json")
    monkeypatch.setenv("CI", "true")
    assert not want_progress_bar("text")
    monkeypatch.setenv("CI", "false")
    assert want_progress_bar("text")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert not want_progress_bar("text")


def test_client_settings(monkeypatch):
    for name in ("AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", aws_calls.API_TIMEOUT_ENV):
        monkeypatch.delenv(name, raising=False)
    config = aws_calls.client_config()
    assert config.retries == {"mode": "standard", "total_max_attempts": aws_calls.DEFAULT_MAX_ATTEMPTS}
    assert config.read_timeout == aws_calls.DEFAULT_READ_TIMEOUT
    assert aws_calls.client_config(max_attempts=1).retries["total_max_attempts"] == 1
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "9")
    monkeypatch.setenv(aws_calls.API_TIMEOUT_ENV, "2.5")
    config = aws_calls.client_config()
    assert config.retries == {"mode": "adaptive"} and config.read_timeout == 2.5  # botocore reads AWS_MAX_ATTEMPTS
    monkeypatch.setenv(aws_calls.API_TIMEOUT_ENV, "soon")
    with pytest.raises(UserError) as info:
        aws_calls.client_config()
    assert info.value.code == exit_codes.USAGE


def test_send_creates_without_botocore_retries_and_describes_with_them(aws: MotoServer, tmp_path, monkeypatch):
    # send()'s own clients, over real HTTP: a 5xx on CreateTrainingJob is smtrain's to resolve (describe, then
    # send once more), never resent blind by botocore, whose standard mode would retry it at once; the other
    # clients keep botocore's retries (a throttled DescribeTrainingJob is sent again by botocore alone).
    for key, value in aws.env(tmp_path).items():
        monkeypatch.setenv(key, value)
    prepared = submission.prepare(build_plan(load_spec(live_spec(tmp_path), env={}), load_catalog()), "no-blind-resend")
    aws.control.inject("DescribeTrainingJob", THROTTLE)
    aws.control.inject("CreateTrainingJob", Fault("InternalFailure", "injected 500", status=500))
    submitted = submission.send(prepared)
    assert aws.control.calls == ["DescribeTrainingJob", "DescribeTrainingJob", "PutObject", "CreateTrainingJob",
                                 "DescribeTrainingJob", "CreateTrainingJob"]
    assert aws.jobs() == ["no-blind-resend"] and submitted.arn and not submitted.confirmed_by_describe
    assert aws.control.create_requests == [prepared.body, prepared.body]  # the value prepared, unchanged


def test_unknown_region_is_refused_before_any_call():
    with pytest.raises(UserError, match="unknown AWS region 'mars-north-1'"):
        aws_calls.boto_session("mars-north-1")


def test_explanations_are_actionable():
    assert "aws sso login" in aws_calls.explain(NoCredentialsError(), "do it")
    assert aws_calls.API_TIMEOUT_ENV in aws_calls.explain(TIMEOUT, "do it")
    assert "Service Quotas" in aws_calls.explain(_client_error("ResourceLimitExceeded"), "do it")
    assert "expired" in aws_calls.explain(_client_error("ExpiredTokenException"), "do it")
    assert aws_calls.explain(ValueError("x"), "do it") is None
    with pytest.raises(UserError) as info, aws_calls.api_errors("create training job x"):
        raise _client_error("AccessDeniedException", 400, "not authorized")
    assert info.value.code == exit_codes.API and str(info.value).startswith("cannot create training job x: access")


def test_parse_since():
    now = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
    assert parse_since("2h", now) == dt.datetime(2025, 3, 1, 10, 0, tzinfo=dt.timezone.utc)
    assert parse_since("7d", now) == dt.datetime(2025, 2, 22, 12, 0, tzinfo=dt.timezone.utc)
    assert parse_since("2025-02-01", now) == dt.datetime(2025, 2, 1, tzinfo=dt.timezone.utc)
    assert parse_since("2025-02-01T08:00:00+02:00", now).utcoffset() == dt.timedelta(hours=2)
    with pytest.raises(ValueError):
        parse_since("last tuesday", now)


def test_the_harness_adds_what_moto_lacks(aws: MotoServer):
    from tests.support.moto_server import create_job

    sm = aws.client("sagemaker")
    create_job(aws, "h-1")
    described = sm.describe_training_job(TrainingJobName="h-1")
    assert described["TrainingJobStatus"] == "InProgress"  # moto alone: Completed at once
    assert described["OutputDataConfig"]["KmsKeyId"] == ""  # moto alone: missing
    with pytest.raises(ClientError) as info:
        create_job(aws, "h-1")
    assert info.value.response["Error"]["Code"] == "ResourceInUse"  # moto alone: overwritten
    sm.stop_training_job(TrainingJobName="h-1")  # moto alone: not implemented
    assert sm.describe_training_job(TrainingJobName="h-1")["TrainingJobStatus"] == "Stopping"
    aws.set_status("h-1", "Stopped")
    with pytest.raises(ClientError) as info:
        sm.stop_training_job(TrainingJobName="h-1")
    assert info.value.response["Error"]["Code"] == "ValidationException"
    aws.control.inject("ListTrainingJobs", moto_server.THROTTLE)  # a real HTTP 400 ThrottlingException...
    assert sm.list_training_jobs()["TrainingJobSummaries"]  # ...that botocore retries
    assert aws.control.count("ListTrainingJobs") == 2


def test_a_job_found_after_a_lost_answer_is_ours_only_if_it_is_the_request_sent():
    class Raced(FakeSageMaker):
        def __init__(self, found: dict) -> None:
            super().__init__(_client_error("InternalFailure", 500))
            self.found = found

        def describe_training_job(self, TrainingJobName: str) -> dict:  # noqa: N803 (boto3's spelling)
            self.describes += 1
            return {"TrainingJobArn": "arn:job", **self.found}

    request = {"TrainingJobName": "job-1", "HyperParameters": {"epochs": "3"}, "RoleArn": "arn:role"}
    same = Raced({"HyperParameters": {"epochs": "3"}, "RoleArn": "arn:role"})
    assert create_training_job(same, same, request, sleep=lambda s: None).arn == "arn:job"
    other = Raced({"HyperParameters": {"epochs": "99"}, "RoleArn": "arn:role"})
    with pytest.raises(AwsError) as info:
        create_training_job(other, other, request, sleep=lambda s: None)
    assert info.value.code == 4 and "is not this submit's (its HyperParameters differs" in str(info.value)
    assert other.creates == 1  # never sent again


def test_the_retry_caps_are_counted():
    from smtrain.sagemaker.create import MAX_AMBIGUOUS_ATTEMPTS, MAX_THROTTLED_ATTEMPTS

    assert (MAX_THROTTLED_ATTEMPTS, MAX_AMBIGUOUS_ATTEMPTS) == (8, 3)
    throttle = _client_error("ThrottlingException")
    last_chance = FakeSageMaker(*[throttle] * (MAX_THROTTLED_ATTEMPTS - 1), None)
    assert create_training_job(last_chance, last_chance, REQUEST, sleep=lambda s: None).attempts == 8
    always = FakeSageMaker(*[throttle] * MAX_THROTTLED_ATTEMPTS)
    with pytest.raises(ClientError):
        create_training_job(always, always, REQUEST, sleep=lambda s: None)
    assert always.creates == MAX_THROTTLED_ATTEMPTS  # not one more
    lost = FakeSageMaker(*[TIMEOUT] * MAX_AMBIGUOUS_ATTEMPTS)  # every answer lost, the job never there
    with pytest.raises(ReadTimeoutError):
        create_training_job(lost, lost, REQUEST, sleep=lambda s: None)
    assert (lost.creates, lost.describes) == (MAX_AMBIGUOUS_ATTEMPTS, MAX_AMBIGUOUS_ATTEMPTS)
