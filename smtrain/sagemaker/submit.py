"""The rendered request -> SageMaker: the dry run returns it, submit sends that very value through boto3.

prepare() makes the bundle and its name and renders the CreateTrainingJob request (smtrain.render); the dry
run shows that value and send() sends it: the bundle uploaded unless S3 has it, the request created so that
one submission never makes two jobs (smtrain.sagemaker.create). Only the job name's time and suffix and the
bundle's sha256 differ between two runs of the same spec (TorchX's `schedule(submit_dryrun(...))`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smtrain import exit_codes
from smtrain.bundle.request import Request, make_request
from smtrain.errors import AwsError
from smtrain.jobs import reattach_command
from smtrain.plan.build import Plan
from smtrain.render.request_limits import request_problems
from smtrain.render.training_request import render_training_request
from smtrain.sagemaker.create import (
    TRAINING,
    CreateOutcome,
    JobKind,
    create_training_job,
    job_arn,
)
from smtrain.sagemaker.upload import UploadResult, upload_bundle
from smtrain.spec.problems import SpecError


@dataclass(frozen=True)
class Prepared:
    """A job ready to send: its Request (bundle, name, where the bundle goes) and the request rendered for it."""

    request: Request
    body: dict[str, Any]  # CreateTrainingJob's parameters, exactly as sent

    def to_dict(self) -> dict[str, Any]:
        """The dry run's JSON: real values (the CLI masks the whole document when it shows it)."""
        return {"job_name": self.request.job_name, "request": self.body, "upload": self.request.upload_summary()}


def prepare(plan: Plan, job_name: str | None = None) -> Prepared:
    """The bundle, the name and the CreateTrainingJob request, within every limit; offline, no credentials."""
    request = make_request(plan, job_name)
    TRAINING.check_name(request.job_name)
    body = render_training_request(plan, request.job_name, request.source_uri)
    problems = request_problems(plan, body)
    if problems:
        raise SpecError(problems)
    return Prepared(request, body)


def dry_run(plan: Plan, job_name: str | None = None) -> dict[str, Any]:
    """The exact CreateTrainingJob request, and what would be uploaded; offline, no credentials."""
    return prepare(plan, job_name).to_dict()


@dataclass(frozen=True)
class Submitted:
    """A job SageMaker accepted, and how its code got there."""

    request: Request
    upload: UploadResult
    arn: str | None
    confirmed_by_describe: bool  # the create's answer was lost; DescribeTrainingJob showed the job

    @property
    def job_name(self) -> str:
        return self.request.job_name

    @property
    def region(self) -> str:
        return self.request.plan.region

    @property
    def region_flag(self) -> str | None:
        """The region follow-up commands must name: None when it is the default one anyway."""
        from smtrain.aws import default_region

        return None if self.region == default_region() else self.region

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON of `smtrain submit` (README: "JSON output")."""
        from smtrain.sagemaker.backend import console_url, logs_url

        name, flag = self.job_name, self.region_flag
        return {
            "job_name": name, "arn": self.arn, "region": self.region, "status": "InProgress",
            "upload": {**self.upload.to_dict(), "git": self.request.git_summary()},  # code.git: what runs
            "console_url": console_url(self.region, name), "logs_url": logs_url(self.region, name),
            "commands": {verb: reattach_command(*words, region=flag) for verb, words in (
                ("status", ("status", name)), ("logs", ("logs", name, "--follow")), ("wait", ("wait", name)),
                ("stop", ("stop", name)))},
        }


def upload_and_create(request: Request, body: dict[str, Any], kind: JobKind, *,
                      progress: bool = False) -> tuple[UploadResult, CreateOutcome]:
    """The bundle uploaded (unless S3 has it), then `body` created as it is: a training or a tuning job.

    Nothing is uploaded unless the region, the credentials and the job name check out, and no job
    is created unless the upload succeeded. Errors are UserErrors: one line, exit code 4.
    """
    from smtrain.aws import api_errors, boto_session, client_config

    name, region = request.job_name, request.plan.region
    boto = boto_session(region)
    sagemaker = boto.client("sagemaker")
    with api_errors(f"check that the {kind.noun} name {name} is free"):
        if job_arn(sagemaker, name, kind) is not None:
            raise AwsError(f"a {kind.noun} named {name} already exists in {region}: pick another --job-name",
                            exit_codes.API)
    with api_errors(f"upload the source bundle to {request.source_uri}"):
        uploaded = upload_bundle(boto.client("s3"), request.bundle, request.source_uri, progress=progress)
    # botocore's retries off for the create: create_training_job retries itself, never making two jobs.
    creator = boto.client("sagemaker", config=client_config(max_attempts=1))
    with api_errors(f"create {kind.noun} {name}"):
        outcome = create_training_job(creator, sagemaker, body, kind=kind)
    return uploaded, outcome


def send(prepared: Prepared, *, progress: bool = False) -> Submitted:
    """Create the training job from `prepared.body`, unchanged (upload_and_create)."""
    uploaded, outcome = upload_and_create(prepared.request, prepared.body, TRAINING, progress=progress)
    return Submitted(prepared.request, uploaded, outcome.arn, outcome.confirmed_by_describe)


def submit(plan: Plan, job_name: str | None = None, *, progress: bool = False) -> Submitted:
    """send(prepare(plan)): the request the dry run shows is the one sent."""
    return send(prepare(plan, job_name), progress=progress)
