"""Request -> SageMaker: the estimator arguments, then the offline dry run or the real submit."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from smtrain import exit_codes
from smtrain.bundle.request import Request, make_request
from smtrain.errors import UserError
from smtrain.jobs import reattach_command
from smtrain.plan.build import Plan
from smtrain.plan.request_limits import request_problems
from smtrain.plan.request_preview import (
    CHECKPOINT_LOCAL_PATH,
    TENSORBOARD_LOCAL_PATH,
    instance_preferences,
    max_wait_seconds,
    metric_definitions,
    tensorboard_s3_path,
    volume_size_gb,
)
from smtrain.sagemaker.upload import UploadResult, upload_bundle
from smtrain.spec.problems import SpecError


def estimator_spec(request: Request) -> Any:
    """The SDK-neutral description of the TensorFlow estimator (see backends.sagemaker)."""
    from smtrain.sagemaker.estimator import EstimatorSpec

    plan, spec = request.plan, request.plan.spec
    output = spec.output.rstrip("/")
    c = spec.compute
    tensorboard = tensorboard_s3_path(spec)
    return EstimatorSpec(
        region=plan.region,
        role=spec.role,
        entry_point=plan.entry_point,
        source_dir=request.source_uri,
        instance_type=plan.instance.name,
        instance_count=plan.nodes,
        framework_version=plan.framework_version,
        py_version=plan.py_version,
        image_uri=plan.image_uri,
        distribution=plan.distribution,
        hyperparameters=dict(plan.hyperparameters),
        output_path=output,
        code_location=output,
        volume_size_gb=volume_size_gb(c),
        max_run=c.max_run,
        use_spot=c.spot,
        max_wait=max_wait_seconds(c),
        checkpoint_s3_uri=spec.checkpoints,
        checkpoint_local_path=CHECKPOINT_LOCAL_PATH if spec.checkpoints else None,
        keep_alive_seconds=c.keep_alive or None,
        subnets=spec.network.subnets,
        security_group_ids=spec.network.security_groups,
        network_isolation=spec.network.isolation,
        encrypt_inter_container_traffic=spec.network.encrypt_inter_container_traffic,
        environment=dict(plan.environment),  # the spec's, then smtrain's SMTRAIN_* variables
        tags=dict(spec.tags),
        metric_definitions=metric_definitions(plan.metrics),
        inputs={name: {"uri": ch.uri, "mode": ch.mode, "distribution": ch.distribution}
                for name, ch in spec.inputs.items()},
        tensorboard_s3_uri=tensorboard,
        tensorboard_local_path=TENSORBOARD_LOCAL_PATH if tensorboard else None,
        max_retry_attempts=c.max_retry_attempts,
        output_kms_key=spec.output_kms_key,
        volume_kms_key=c.volume_kms_key,
        training_plan=c.training_plan,
        instance_preferences=tuple(instance_preferences(c) or ()) or None,
        max_pending=c.max_pending,
    )


@contextlib.contextmanager
def _sdk_refusals() -> Iterator[None]:
    """The SDK's ValueErrors (settings it refuses) are the user's to fix: exit 2, one line."""
    try:
        yield
    except ValueError as exc:
        raise UserError(str(exc), exit_codes.USAGE) from exc


def _refuse_over_limits(plan: Plan, body: dict[str, Any]) -> None:
    """The SDK's request against every CreateTrainingJob limit, before anything is sent (exit 2 at the spec field)."""
    problems = request_problems(plan, body)
    if problems:
        raise SpecError(problems)


def dry_run(plan: Plan, job_name: str | None = None) -> dict[str, Any]:
    """The exact CreateTrainingJob request, and what would be uploaded; offline, no credentials."""
    from smtrain.sagemaker.estimator import render_request

    request = make_request(plan, job_name)
    with _sdk_refusals():
        body = render_request(estimator_spec(request), request.job_name)
    _refuse_over_limits(plan, body)
    # Real values: the CLI masks the whole document when it renders it (smtrain.redact.mask_data).
    return {"job_name": request.job_name, "request": body, "upload": request.upload_summary()}


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
        from smtrain.aws_config import default_region

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


def submit(plan: Plan, job_name: str | None = None, *, progress: bool = False) -> Submitted:
    """Upload the bundle (unless S3 has it) and create the training job, through the dry run's code.

    Nothing is uploaded unless the region, the credentials and the job name check out, and no job
    is created unless the upload succeeded. Errors are UserErrors: one line, exit code 4.
    """
    from smtrain.sagemaker import estimator as sm
    from smtrain.sagemaker.aws import api_errors, boto_session
    from smtrain.sagemaker.create import job_arn

    request = make_request(plan, job_name)
    spec, name = estimator_spec(request), request.job_name
    with _sdk_refusals():
        sm.validate_job_name(name)
    boto = boto_session(plan.region)
    # Credentials, permissions and the name first: they fail in a second, before the SDK loads.
    with api_errors(f"check that the job name {name} is free"):
        if job_arn(boto.client("sagemaker"), name) is not None:
            raise UserError(f"a training job named {name} already exists in {plan.region}: "
                            "pick another --job-name", exit_codes.API)
    with _sdk_refusals():
        # The request the dry run shows is the one sent: check it before the upload and the create.
        _refuse_over_limits(plan, sm.render_request(spec, name))
        session = sm.make_session(plan.region, dry_run=False, boto_session=boto)
        estimator = sm.build_estimator(spec, session)
    with api_errors(f"upload the source bundle to {request.source_uri}"):
        uploaded = upload_bundle(session.s3_client, request.bundle, request.source_uri, progress=progress)
    with api_errors(f"create training job {name}"), _sdk_refusals():
        sm.start_training(estimator, spec, name)
    outcome = session.created
    return Submitted(request, uploaded, outcome.arn, outcome.confirmed_by_describe)
