"""CreateTrainingJob (and CreateHyperParameterTuningJob) sent so that one submission never makes two jobs.

botocore's retries would resend CreateTrainingJob after a read timeout or a 5xx, when the first
request may well have created the job. So the client that sends it has botocore's retries off, and
this module retries by itself:

* throttling (the request was refused, nothing was created): back off and send again;
* an ambiguous failure (read timeout, dropped connection, 5xx): ask DescribeTrainingJob first; if
  the job exists and is the request we sent (its code, hyperparameters, image, role, instances and
  output: another submit of the same name may have taken it meanwhile), it is ours, else that is said
  (exit 4); if it does not exist, send again; ResourceInUse after an ambiguous attempt is looked up the
  same way;
* anything else: raise, for :func:`smtrain.aws.api_errors` to explain.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smtrain import exit_codes
from smtrain.aws import THROTTLING_CODES, error_code, http_status, is_not_found
from smtrain.errors import AwsError
from smtrain.spec.patterns import JOB_NAME, TUNING_JOB_NAME, Pattern, check_job_name

MAX_THROTTLED_ATTEMPTS = 8
MAX_AMBIGUOUS_ATTEMPTS = 3
_BASE_DELAY = 0.5
_MAX_DELAY = 20.0


@dataclass(frozen=True)
class CreateOutcome:
    arn: str | None
    attempts: int
    confirmed_by_describe: bool  # an attempt's answer was lost; DescribeTrainingJob showed the job


def _backoff(attempt: int) -> float:
    # Full jitter, as botocore's standard mode does.
    return random.uniform(0, min(_MAX_DELAY, _BASE_DELAY * 2 ** (attempt - 1)))


def _ambiguous(exc: BaseException) -> bool:
    """Whether the request may have reached SageMaker and created the job."""
    from botocore import exceptions as bx

    if isinstance(exc, (bx.EndpointConnectionError, bx.ConnectTimeoutError)):
        return False  # never connected: nothing was sent
    if isinstance(exc, (bx.ReadTimeoutError, bx.ConnectionClosedError, bx.HTTPClientError, bx.ConnectionError)):
        return True
    status = http_status(exc)
    return isinstance(exc, bx.ClientError) and status is not None and status >= 500


@dataclass(frozen=True)
class JobKind:
    """What differs between creating a training job and a tuning job: the API's names."""

    operation: str  # CreateTrainingJob
    name_key: str  # TrainingJobName
    arn_key: str  # TrainingJobArn
    create: str  # the boto3 method: create_training_job
    describe: str  # describe_training_job
    noun: str  # training job, for messages
    name_rule: Pattern  # the name's pattern and length in botocore's model (which checks only the length)

    def check_name(self, name: str, given_as: str | None = None) -> None:
        """Refuse (exit 2) a name SageMaker would refuse for this kind of job."""
        check_job_name(name, self.name_rule, self.noun, given_as)


TRAINING = JobKind("CreateTrainingJob", "TrainingJobName", "TrainingJobArn", "create_training_job",
                   "describe_training_job", "training job",
                   JOB_NAME)
TUNING = JobKind("CreateHyperParameterTuningJob", "HyperParameterTuningJobName", "HyperParameterTuningJobArn",
                 "create_hyper_parameter_tuning_job", "describe_hyper_parameter_tuning_job", "tuning job",
                 TUNING_JOB_NAME)


def described(describe_client: Any, name: str, kind: JobKind = TRAINING) -> dict[str, Any] | None:
    """Describe job `name`; None if SageMaker does not know it."""
    try:
        return getattr(describe_client, kind.describe)(**{kind.name_key: name})
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise


def job_arn(describe_client: Any, name: str, kind: JobKind = TRAINING) -> str | None:
    """The ARN of job `name`, None if SageMaker does not know it."""
    found = described(describe_client, name, kind)
    return found[kind.arn_key] if found is not None else None


# What tells one submit's job from another's of the same name: the code (its S3 key holds the bundle's
# sha256, in the hyperparameters), the hyperparameters, the image, the role, the instances, the output.
_IDENTITY = {"CreateTrainingJob": (("HyperParameters",), ("AlgorithmSpecification", "TrainingImage"), ("RoleArn",),
                                   ("ResourceConfig", "InstanceType"), ("ResourceConfig", "InstanceCount"),
                                   ("OutputDataConfig", "S3OutputPath")),
             "CreateHyperParameterTuningJob": (("TrainingJobDefinition", "StaticHyperParameters"),
                                               ("TrainingJobDefinition", "RoleArn"),
                                               ("TrainingJobDefinition", "OutputDataConfig", "S3OutputPath"))}


def differs(found: dict[str, Any], request: dict[str, Any], kind: JobKind = TRAINING) -> str | None:
    """The first field by which the job SageMaker describes is not the one `request` asks for, or None."""
    for path in _IDENTITY[kind.operation]:
        mine: Any = request
        theirs: Any = found
        for key in path:
            mine = mine.get(key) if isinstance(mine, dict) else None
            theirs = theirs.get(key) if isinstance(theirs, dict) else None
        if mine is not None and mine != theirs:
            return ".".join(path)
    return None


def _ours_or_refuse(found: dict[str, Any], request: dict[str, Any], kind: JobKind, name: str) -> str | None:
    """After a lost answer, the job found under our name is ours only if it is the request we sent."""
    field = differs(found, request, kind)
    if field is not None:
        raise AwsError(f"a {kind.noun} named {name} exists and is not this submit's (its {field} differs from what "
                       f"this submit sent): {kind.operation}'s answer was lost and another submit took the name, so "
                       "this one made no job; submit again under another name", exit_codes.API)
    return found.get(kind.arn_key)


def create_training_job(create_client: Any, describe_client: Any, request: dict[str, Any], *,
                        sleep: Callable[[float], None] = time.sleep, kind: JobKind = TRAINING) -> CreateOutcome:
    """Send CreateTrainingJob `request` (or the create of another `kind`); at most one job results,
    whatever the network does.

    `create_client` must have botocore's retries switched off (total_max_attempts=1).
    """
    name = request[kind.name_key]
    throttled = ambiguous = 0
    while True:
        try:
            response = getattr(create_client, kind.create)(**request)
            return CreateOutcome(response.get(kind.arn_key), throttled + ambiguous + 1, False)
        except Exception as exc:
            code = error_code(exc)
            if code in THROTTLING_CODES and throttled + 1 < MAX_THROTTLED_ATTEMPTS:
                throttled += 1
                sleep(_backoff(throttled))
                continue
            if code == "ResourceInUse" and ambiguous:
                # An earlier attempt whose answer was lost created it, or another submit took the name.
                found = described(describe_client, name, kind)
                arn = _ours_or_refuse(found, request, kind, name) if found is not None else None
                return CreateOutcome(arn, throttled + ambiguous + 1, True)
            if not _ambiguous(exc):
                raise
            ambiguous += 1
            try:
                found = described(describe_client, name, kind)
            except Exception:
                raise AwsError(
                    f"{kind.operation} for {name} failed ambiguously ({type(exc).__name__}) and the job could "
                    f"not be looked up: run `smtrain status {name}` before submitting again", exit_codes.API,
                ) from exc
            if found is not None:
                return CreateOutcome(_ours_or_refuse(found, request, kind, name), throttled + ambiguous, True)
            if ambiguous >= MAX_AMBIGUOUS_ATTEMPTS:
                raise
            sleep(_backoff(ambiguous))
