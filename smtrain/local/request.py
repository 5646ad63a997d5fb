"""The request a local run starts from: the same bundle, and the CreateTrainingJob request a dry run renders.

A spec for --local may name local directories (or file:// URIs) for its inputs and output. The renderer
(smtrain.render) takes them as they are: the request carries the bundle's path, the local output (and
model_dir under it) and the channels' local URIs where SageMaker's would carry s3:// ones. Everything else
(every hyperparameter of the TensorFlow contract, MaxRuntimeInSeconds, the container Environment) is exactly
what SageMaker would receive, but for a SageMaker-managed MLflow (an ARN), which a local run leaves out.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from smtrain import exit_codes
from smtrain.bundle.model import ARCHIVE_NAME
from smtrain.bundle.request import Request, make_bundle, make_request, new_job_name
from smtrain.errors import UserError
from smtrain.local.channels import local_path
from smtrain.plan import tracking
from smtrain.plan.build import Plan
from smtrain.render.training_request import CODE_CHANNEL, render_training_request
from smtrain.spec.tracking import is_arn


def output_root(plan: Plan) -> Path | None:
    """The local directory the spec's output names, or None for an s3:// output."""
    if plan.spec.output.startswith("s3://"):
        return None
    return local_path(plan.spec.output, plan.base_dir)


def _without_managed_mlflow(plan: Plan) -> Plan:
    """A SageMaker-managed MLflow (an ARN) is for SageMaker's hosts: the local run ignores it, as its note says
    (request_limits.sagemaker_only_notes), so it neither reaches AWS from here nor downloads sagemaker-mlflow."""
    if not is_arn(plan.spec.tracking.mlflow):
        return plan
    tracking_spec = plan.spec.tracking.model_copy(update={"mlflow": None, "experiment": None, "run": None})
    dropped = {"MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", tracking.SETTINGS} - set(plan.spec.environment)
    return replace(plan, spec=plan.spec.model_copy(update={"tracking": tracking_spec}),
                   environment={k: v for k, v in plan.environment.items() if k not in dropped})


def local_request(plan: Plan, job_name: str | None = None) -> Request:
    """make_request for a local run: the same bundle, its place under a local output too.

    With an s3:// output this is make_request itself (nothing is uploaded by a local run); with a
    local output the bundle's place mirrors SageMaker's: <output>/source/<sha256>/sourcedir.tar.gz.
    """
    plan = _without_managed_mlflow(plan)
    root = output_root(plan)
    if root is None:
        return make_request(plan, job_name)
    bundle = make_bundle(plan)
    name = job_name or new_job_name(plan.spec.name)
    return Request(plan, name, bundle, str(root / "source" / bundle.sha256 / ARCHIVE_NAME))


def render_local(request: Request) -> dict[str, Any]:
    """The CreateTrainingJob request of this job (the renderer's, as a dry run's), with its places on this
    machine: the bundle's path, a local output (model_dir under it) and the channels as the spec names them;
    no code channel (network isolation's), whose bundle a local run never uploads."""
    plan = request.plan
    if plan.instance_groups:
        raise UserError("compute.instance_groups: a heterogeneous cluster runs on SageMaker only (a local run lays "
                        "out the hosts of one instance type, and cannot yet give each group its own); to run your "
                        "script here, use a copy of the spec with compute.instance_type and nodes instead",
                        exit_codes.USAGE)
    for channel, cfg in plan.spec.inputs.items():
        if cfg.file_system is not None:
            raise UserError(f"input channel '{channel}': a file system ({cfg.file_system.type} "
                            f"{cfg.file_system.id}) is mounted on SageMaker's hosts only; for a local run give the "
                            f"channel a directory here: --set inputs.{channel}=./data", exit_codes.USAGE)
        if cfg.mode == "Pipe":
            raise UserError(f"input channel '{channel}': Pipe mode streams from S3 into a FIFO, which a local "
                            "run cannot do; use File or FastFile", exit_codes.USAGE)
    root = output_root(plan)
    # A local run is choice 1 of a fallback list, as SageMaker's own request would have no InstanceType.
    body = render_training_request(plan, request.job_name, request.source_uri,
                                   output=None if root is None else str(root), capacity=False)
    if plan.spec.network.isolation and CODE_CHANNEL not in plan.spec.inputs:
        # Under network isolation SageMaker hands the code over as a channel of the bundle's S3 key, which a
        # local run never uploads: each host gets the same bundle unpacked by the local backend instead.
        body["InputDataConfig"] = [c for c in body["InputDataConfig"] if c["ChannelName"] != CODE_CHANNEL]
        if not body["InputDataConfig"]:
            del body["InputDataConfig"]
    return body
