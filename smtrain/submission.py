"""Plan -> Request: the bundle, the job name and the estimator arguments every backend starts from."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any

from smtrain.bundle import Bundle, build_bundle, s3_key_for
from smtrain.entrypoint import entrypoint_dir, metric_definitions
from smtrain.plan import BUNDLED_ENTRY_POINT, Plan
from smtrain.render import mask_environment

# SageMaker's limit on TrainingJobName.
JOB_NAME_MAX = 63
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"


def new_job_name(prefix: str, now: dt.datetime | None = None, suffix: str | None = None) -> str:
    """<prefix>-<UTC yyyymmdd-HHMMSS>-<4 hex>: sortable, and unique across quick re-submits."""
    now = now or dt.datetime.now(dt.timezone.utc)
    suffix = suffix or secrets.token_hex(2)
    name = f"{prefix}-{now.astimezone(dt.timezone.utc):%Y%m%d-%H%M%S}-{suffix}"
    if len(name) > JOB_NAME_MAX:
        raise ValueError(f"job name {name!r} is longer than {JOB_NAME_MAX} characters")
    return name


def make_bundle(plan: Plan) -> Bundle:
    """The sourcedir.tar.gz of this job: the bundled entrypoint plus the user's code."""
    code = plan.spec.code
    source = (plan.base_dir / code.source_dir).resolve() if code.source_dir else None
    return build_bundle(entrypoint_dir(), source, code.requirements, use_gitignore=code.use_gitignore,
                        allow=code.allow_secrets, max_size=code.max_bundle_size,
                        exclude_entrypoint_files=("README.md", "__init__.py"))


@dataclass(frozen=True)
class Request:
    """Everything a backend needs to start the job, decided before anything is sent."""

    plan: Plan
    job_name: str
    bundle: Bundle
    source_uri: str  # where the bundle lives (content-addressed)

    def upload_summary(self) -> dict[str, Any]:
        return {"uri": self.source_uri, "bytes": self.bundle.size, "sha256": self.bundle.sha256,
                "files": [{"path": f.path, "bytes": f.size, "from": f.origin} for f in self.bundle.files]}


def make_request(plan: Plan, job_name: str | None = None) -> Request:
    bundle = make_bundle(plan)
    return Request(plan, job_name or new_job_name(plan.spec.name), bundle, s3_key_for(plan.spec.output, bundle))


def estimator_spec(request: Request) -> Any:
    """The SDK-neutral description of the TensorFlow estimator (see backends.sagemaker)."""
    from smtrain.backends.sagemaker import EstimatorSpec

    plan, spec = request.plan, request.plan.spec
    output = spec.output.rstrip("/")
    c = spec.compute
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
        volume_size_gb=max(1, c.volume_size // 10**9),
        max_run=c.max_run,
        use_spot=c.spot,
        max_wait=(c.max_wait or 2 * c.max_run) if c.spot else None,
        checkpoint_s3_uri=spec.checkpoints,
        checkpoint_local_path=CHECKPOINT_LOCAL_PATH if spec.checkpoints else None,
        keep_alive_seconds=c.keep_alive or None,
        subnets=spec.network.subnets,
        security_group_ids=spec.network.security_groups,
        network_isolation=spec.network.isolation,
        encrypt_inter_container_traffic=spec.network.encrypt_inter_container_traffic,
        environment=dict(spec.environment),
        tags=dict(spec.tags),
        metric_definitions=metric_definitions() if plan.entry_point == BUNDLED_ENTRY_POINT else (),
        inputs={name: {"uri": ch.uri, "mode": ch.mode, "distribution": ch.distribution}
                for name, ch in spec.inputs.items()},
    )


def dry_run(plan: Plan, job_name: str | None = None) -> dict[str, Any]:
    """The exact CreateTrainingJob request, and what would be uploaded; offline, no credentials."""
    from smtrain.backends.sagemaker import render_request

    request = make_request(plan, job_name)
    body = render_request(estimator_spec(request), request.job_name)
    if "Environment" in body:
        body["Environment"] = mask_environment(body["Environment"])
    return {"job_name": request.job_name, "request": body, "upload": request.upload_summary()}
