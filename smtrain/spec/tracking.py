"""The rules of `tracking:` that need no catalog: what an MLflow target is, and what goes with it.

An ARN names a SageMaker-managed MLflow tracking server or app (botocore's MlflowConfig.MlflowResourceArn): it is
rendered as the request's MlflowConfig. Anything else must be a tracking URI MLflow itself takes for a remote or
file store (http://, https://, file:, databricks): it reaches the job as MLflow's own environment variables.
Credentials never sit in a URI: MLflow reads MLFLOW_TRACKING_USERNAME/PASSWORD/TOKEN from the environment, where
smtrain masks them. A tuning job's trials have no place for MlflowConfig or ExperimentConfig
(HyperParameterTrainingJobDefinition), so those are refused there; a URI's variables reach every trial.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from smtrain.spec import patterns
from smtrain.spec.problems import Path_, Problem

URI_SCHEMES = ("http", "https", "file", "databricks")


def is_arn(target: str | None) -> bool:
    return target is not None and target.startswith("arn:")


def tracking_problems(spec: Any, problem: Callable[[Path_, str], Problem]) -> list[Problem]:
    """What `tracking` (spec.tracking) cannot be, each made by `problem` (LoadedSpec.problem) at its field."""
    t, out = spec.tracking, []
    where = ("tracking", "mlflow")
    if t.mlflow is None:
        out += [problem(("tracking", name), f"tracking.{name} names MLflow's {name}: set tracking.mlflow too (an ARN "
                                            "or a tracking URI), or remove it")
                for name in ("experiment", "run") if getattr(t, name) is not None]
    elif is_arn(t.mlflow):
        if not patterns.MLFLOW_ARN.matches(t.mlflow):
            out.append(problem(where, "not an MLflow ARN: write arn:aws:sagemaker:REGION:ACCOUNT:"
                                      "mlflow-tracking-server/NAME (or an mlflow-app's ARN)"))
    else:
        parts = urlsplit(t.mlflow)
        if parts.scheme not in URI_SCHEMES and t.mlflow != "databricks":  # MLflow takes "databricks" alone too
            out.append(problem(where, "an MLflow target is a SageMaker MLflow ARN or a tracking URI: http(s)://HOST, "
                                      "file:PATH or databricks"))
        elif parts.username is not None or parts.password is not None:
            out.append(problem(where, "no credentials in the URI: set MLFLOW_TRACKING_USERNAME and "
                                      "MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) under environment:, "
                                      "where smtrain masks them"))
    if spec.tuning is not None:
        if is_arn(t.mlflow):
            out.append(problem(where, "a tuning job's trials have no MlflowConfig: use a tracking URI, or remove the "
                                      "tuning: section"))
        if t.sagemaker_experiment is not None:
            out.append(problem(("tracking", "sagemaker_experiment"), "a tuning job's trials have no ExperimentConfig: "
                                                                     "remove it (or the tuning: section)"))
    return out
