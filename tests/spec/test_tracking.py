"""`tracking:`: an MLflow ARN (MlflowConfig), a tracking URI (MLflow's own variables), SageMaker Experiments
(ExperimentConfig), each refused at its field where it cannot go; the plan's line; a local run's note. The request
against SDK v2 is tests/render/test_sdk_oracle.py's (tracking_* cases), the live submit test_submit_live.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.render.request_limits import sagemaker_only_notes
from smtrain.render.training_request import preview_request
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.cli_runner import smtrain
from tests.support.specfiles import write_spec

CATALOG = load_catalog()
ARN = "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team"
TUNING = {"objective": "validation:accuracy", "ranges": {"training.learning_rate": {"min": 0.001, "max": 0.1}}}


def problems(tmp_path: Path, tracking: dict[str, Any], **more: Any) -> list[str]:
    try:
        load_spec(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "tracking": tracking, **more}),
                  env={})
    except SpecError as error:
        return [f"{'.'.join(map(str, p.path))}: {p.message}" for p in error.problems]
    return []


@pytest.mark.parametrize("target", [ARN, "arn:aws:sagemaker:eu-west-1:123456789012:mlflow-app/app-abc", "http://127.0.0.1:5000",
                                    "https://mlflow.example.com/", "file:./mlruns", "file:///tmp/mlruns", "databricks",
                                    "databricks://profile"])
def test_an_mlflow_target_is_an_arn_or_a_tracking_uri(tmp_path, target):
    assert problems(tmp_path, {"mlflow": target, "experiment": "mnist"}) == []


@pytest.mark.parametrize(("tracking", "more", "expected"), [
    ({"mlflow": "arn:aws:sagemaker:us-east-1:123456789012:training-job/x"}, {},
     "tracking.mlflow: not an MLflow ARN: write arn:aws:sagemaker:REGION:ACCOUNT:mlflow-tracking-server/NAME"),
    ({"mlflow": "ftp://host/x"}, {}, "tracking.mlflow: an MLflow target is a SageMaker MLflow ARN or a tracking URI"),
    ({"mlflow": "./mlruns"}, {}, "tracking.mlflow: an MLflow target is a SageMaker MLflow ARN or a tracking URI"),
    ({"mlflow": "https://me:secret@mlflow.example.com"}, {}, "tracking.mlflow: no credentials in the URI"),
    ({"experiment": "mnist"}, {}, "tracking.experiment: tracking.experiment names MLflow's experiment: set "
                                  "tracking.mlflow too"),
    ({"run": "r"}, {}, "tracking.run: tracking.run names MLflow's run"),
    ({"mlflow": "http://127.0.0.1:5000", "run": "r"}, {}, "tracking.run: a run name reaches SageMaker-managed MLflow "
                                                          "only"),
    ({"mlflow": ARN}, {"tuning": TUNING}, "tracking.mlflow: a tuning job's trials have no MlflowConfig"),
    ({"sagemaker_experiment": {"experiment": "e"}}, {"tuning": TUNING},
     "tracking.sagemaker_experiment: a tuning job's trials have no ExperimentConfig"),
    ({"sagemaker_experiment": {"experiment": "no_underscore"}}, {},
     "tracking.sagemaker_experiment.experiment: 'no_underscore' is not an experiment entity name"),
    ({"sagemaker_experiment": {"trial": "t"}}, {}, "tracking.sagemaker_experiment.experiment: "),
    ({"mlflow": "http://127.0.0.1:5000"}, {"environment": {"MLFLOW_TRACKING_URI": "http://other"}},
     "environment.MLFLOW_TRACKING_URI: smtrain sets MLFLOW_TRACKING_URI for this job (from tracking.mlflow)"),
])
def test_what_tracking_refuses_at_its_field(tmp_path, tracking, more, expected):
    found = problems(tmp_path, tracking, **more)
    if not found and "environment" in more:  # a clash is the plan's finding
        try:
            build_plan(load_spec(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                                       "tracking": tracking, **more}), env={}), CATALOG)
        except SpecError as error:
            found = [f"{'.'.join(map(str, p.path))}: {p.message}" for p in error.problems]
    assert any(p.startswith(expected) for p in found), found


def test_a_uri_reaches_every_trial_of_a_tuning_job(tmp_path):
    assert problems(tmp_path, {"mlflow": "http://127.0.0.1:5000", "experiment": "tuned"}, tuning=TUNING) == []


def test_the_limits_of_the_names_at_and_past_them(tmp_path):
    assert problems(tmp_path, {"mlflow": ARN, "experiment": "e" * 256, "run": "r" * 256}) == []
    found = problems(tmp_path, {"mlflow": ARN, "experiment": "e" * 257, "run": "r" * 257})
    assert sorted(p.split(":")[0] for p in found) == ["tracking.experiment", "tracking.run"], found
    assert problems(tmp_path, {"sagemaker_experiment": {"experiment": "e" * 120, "trial": "t" * 120,
                                                        "run": "r" * 120}}) == []
    found = problems(tmp_path, {"sagemaker_experiment": {"experiment": "e" * 121, "trial": "t" * 121,
                                                         "run": "r" * 121}})
    assert len(found) == 3, found
    longest = ARN[:ARN.index("/") + 1] + "n" * (2048 - ARN.index("/") - 1)
    assert problems(tmp_path, {"mlflow": longest}) == []
    assert problems(tmp_path, {"mlflow": longest + "n"})[0].startswith("tracking.mlflow: not an MLflow ARN")


def test_the_plan_says_where_runs_go_and_a_local_run_notes_an_arn(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                 "tracking": {"mlflow": ARN, "experiment": "mnist", "run": "first",
                                              "sagemaker_experiment": {"experiment": "mnist-exp", "run": "r1"}}})
    shown = smtrain("plan", str(spec))
    assert shown.returncode == 0, shown.stderr
    assert (f"  tracking      MLflow {ARN} (experiment mnist, run first): SageMaker-managed (MlflowConfig)"
            in shown.stdout.splitlines())
    assert "  experiment    SageMaker Experiments mnist-exp (run r1)" in shown.stdout.splitlines()
    loaded = load_spec(spec, env={})
    assert sagemaker_only_notes(loaded.spec)[:2] == [
        "tracking.sagemaker_experiment (SageMaker Experiments' trial component of the job) applies on SageMaker only; "
        "this local run ignores it",
        "tracking.mlflow (SageMaker-managed MLflow, MlflowConfig) applies on SageMaker only; this local run ignores it "
        "(a tracking URI reaches local hosts as it reaches SageMaker's)"]
    uri = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                "tracking": {"mlflow": "file:./mlruns", "experiment": "mnist"}}, name="uri.yaml")
    plan = build_plan(load_spec(uri, env={}), CATALOG)
    assert {k: v for k, v in preview_request(plan)["Environment"].items() if k.startswith("MLFLOW_")} == {
        "MLFLOW_TRACKING_URI": "file:./mlruns", "MLFLOW_EXPERIMENT_NAME": "mnist"}
    assert sagemaker_only_notes(plan.spec) == []
    assert "  tracking      MLflow file:./mlruns (experiment mnist): MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_NAME" in \
        smtrain("plan", str(uri)).stdout.splitlines()
