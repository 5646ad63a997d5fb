"""What `tracking.mlflow` adds to a job: MLflow's own variables, SMTRAIN_MLFLOW, and MLflow in its requirements.

The job's chief logs one MLflow run (entrypoints/smtrain_tf/contract/mlflow_run.py). It finds the target in
MLflow's MLFLOW_TRACKING_URI (an ARN too: with the sagemaker-mlflow plugin MLflow takes a SageMaker-managed
server's ARN as its tracking URI) and MLFLOW_EXPERIMENT_NAME, and in SMTRAIN_MLFLOW what the container cannot
know: the run's name, the image, smtrain's version, the output path, and for a tuning trial the tuning job
(without the output path where a long one would pass the 512 characters SageMaker takes: the run then has no
model_uri tag; the rest, a 256-character run name included, stays under it).

MLflow is not in SageMaker's TensorFlow training images (aws/deep-learning-containers lists each image's
packages; 2.19's names none of mlflow, mlflow-skinny, sagemaker-mlflow), so the client joins the bundle's
requirements.txt, pinned, as tf-keras does (smtrain.bundle.job_requirements): mlflow-skinny (the tracking
client without the server's dependencies) and, for an ARN, sagemaker-mlflow (its SigV4 auth and ARN resolver).
A user's own line for either (by project name) is left as it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smtrain.errors import UserError
from smtrain.spec.local_uri import local_path
from smtrain.spec.model import Spec
from smtrain.spec.tracking import is_arn

SETTINGS = "SMTRAIN_MLFLOW"  # read by the job's mlflow_run.py
MLFLOW_CLIENT = "mlflow-skinny==3.17.2"
SAGEMAKER_PLUGIN = "sagemaker-mlflow==0.5.0"
ENVIRONMENT_VALUE_MAX = 512  # CreateTrainingJob's EnvironmentValue (botocore's service model)


def requirements(spec: Spec) -> tuple[str, ...]:
    """The lines the job's requirements.txt gets for tracking.mlflow (none without it)."""
    target = spec.tracking.mlflow
    if target is None:
        return ()
    return (MLFLOW_CLIENT, SAGEMAKER_PLUGIN) if is_arn(target) else (MLFLOW_CLIENT,)


def settings(spec: Spec, image_uri: str | None, version: str, base_dir: Path | None = None) -> str | None:
    """SMTRAIN_MLFLOW's value (JSON), None without tracking.mlflow. The output is a local run's place on this
    machine when it is one (relative to the spec's directory), so the run's model_uri names the file."""
    if spec.tracking.mlflow is None:
        return None
    output = spec.output
    if base_dir is not None and not output.startswith("s3://"):
        try:
            output = str(local_path(output, base_dir))
        except UserError:
            pass  # a file:// URI of another machine: as written
    found: dict[str, Any] = {"image": image_uri or "", "smtrain": version, "output": output}
    if spec.tracking.run:
        found["run"] = spec.tracking.run
    text = json.dumps(found, separators=(",", ":"))
    if len(text) > ENVIRONMENT_VALUE_MAX:  # a long output path: the run goes without its model_uri tag
        found.pop("output")
        text = json.dumps(found, separators=(",", ":"))
    return text


def for_tuning(environment: dict[str, str], tuning_name: str) -> dict[str, str]:
    """A trial's environment: SMTRAIN_MLFLOW names the tuning job, whose parent run each trial's run is under;
    each trial's run is named for its training job (one tracking.run for every trial would name them alike)."""
    if SETTINGS not in environment:
        return environment
    found = json.loads(environment[SETTINGS])
    found.pop("run", None)
    found["tuning"] = tuning_name
    return {**environment, SETTINGS: json.dumps(found, separators=(",", ":"))}
