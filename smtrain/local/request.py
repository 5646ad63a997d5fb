"""The request a local run starts from: the same bundle, and the CreateTrainingJob request rendered offline.

A spec for --local may name local directories (or file:// URIs) for its inputs and output, which
the SageMaker SDK refuses. The request is rendered with stand-in s3:// URIs in their place, through
the same code as a dry run, and the two values that carry a local place (the code's location and
model_dir) are then put back. Everything else (every HyperParameter the SDK adds, the channels,
MaxRuntimeInSeconds, the container Environment) is exactly what SageMaker would receive.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from smtrain import exit_codes
from smtrain.bundle.build import s3_key_for
from smtrain.bundle.model import ARCHIVE_NAME
from smtrain.bundle.request import Request, make_bundle, make_request, new_job_name
from smtrain.errors import UserError
from smtrain.local.channels import local_path
from smtrain.plan.build import Plan
from smtrain.sagemaker.submit import estimator_spec

# Stand-ins that only ever live inside the rendered request; never contacted.
_STAND_IN = "s3://smtrain-local-run"


def output_root(plan: Plan) -> Path | None:
    """The local directory the spec's output names, or None for an s3:// output."""
    if plan.spec.output.startswith("s3://"):
        return None
    return local_path(plan.spec.output, plan.base_dir)


def local_request(plan: Plan, job_name: str | None = None) -> Request:
    """make_request for a local run: the same bundle, its place under a local output too.

    With an s3:// output this is make_request itself (nothing is uploaded by a local run); with a
    local output the bundle's place mirrors SageMaker's: <output>/source/<sha256>/sourcedir.tar.gz.
    """
    root = output_root(plan)
    if root is None:
        return make_request(plan, job_name)
    bundle = make_bundle(plan)
    name = job_name or new_job_name(plan.spec.name)
    return Request(plan, name, bundle, str(root / "source" / bundle.sha256 / ARCHIVE_NAME))


def render_local(request: Request) -> dict[str, Any]:
    """The CreateTrainingJob request SageMaker would get for this job, with local places put back."""
    from smtrain.sagemaker.estimator import render_request

    plan = request.plan
    spec = estimator_spec(request)
    root = output_root(plan)
    replace: dict[str, Any] = {}
    if root is not None:
        replace.update(output_path=f"{_STAND_IN}/output", code_location=f"{_STAND_IN}/output",
                       source_dir=s3_key_for(f"{_STAND_IN}/output", request.bundle))
    inputs = {}
    for channel, cfg in spec.inputs.items():
        if cfg.get("mode") == "Pipe":
            raise UserError(f"input channel '{channel}': Pipe mode streams from S3 into a FIFO, which a local "
                            "run cannot do; use File or FastFile", exit_codes.USAGE)
        uri = cfg["uri"] if str(cfg["uri"]).startswith("s3://") else f"{_STAND_IN}/input/{channel}"
        inputs[channel] = {**cfg, "uri": uri}
    replace["inputs"] = inputs
    # A local run is choice 1 of a fallback list, as SageMaker's own request would have no InstanceType.
    replace.update(instance_preferences=None, max_pending=None)
    try:
        body = render_request(dataclasses.replace(spec, **replace), request.job_name)
    except ValueError as exc:
        raise UserError(str(exc), exit_codes.USAGE) from exc
    if root is not None:
        hps = body["HyperParameters"]
        hps["sagemaker_submit_directory"] = json.dumps(request.source_uri)
        stand_in_model = f"{_STAND_IN}/output/{request.job_name}/model"
        if json.loads(hps.get("model_dir", "null")) == stand_in_model:
            hps["model_dir"] = json.dumps(str(root / request.job_name / "model"))
        body["OutputDataConfig"]["S3OutputPath"] = str(root)
    for channel in body.get("InputDataConfig", []):
        original = spec.inputs[channel["ChannelName"]]["uri"]
        channel["DataSource"]["S3DataSource"]["S3Uri"] = original
    return body
