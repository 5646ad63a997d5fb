"""`tracking:`: an MLflow ARN (MlflowConfig), a tracking URI (MLflow's own variables), SageMaker Experiments
(ExperimentConfig), each refused at its field where it cannot go; the plan's line; a local run's note. The request
against SDK v2 is tests/render/test_sdk_oracle.py's (tracking_* cases), the live submit test_submit_live.py's."""

from __future__ import annotations

import json
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
        "(with a tracking URI, --set tracking.mlflow=http://HOST:PORT, it logs the same run there)"]
    uri = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                "tracking": {"mlflow": "file:./mlruns", "experiment": "mnist"}}, name="uri.yaml")
    plan = build_plan(load_spec(uri, env={}), CATALOG)
    assert {k: v for k, v in preview_request(plan)["Environment"].items() if k.startswith("MLFLOW_")} == {
        "MLFLOW_TRACKING_URI": "file:./mlruns", "MLFLOW_EXPERIMENT_NAME": "mnist"}
    assert sagemaker_only_notes(plan.spec) == []
    assert "  tracking      MLflow file:./mlruns (experiment mnist): MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_NAME" in \
        smtrain("plan", str(uri)).stdout.splitlines()


# -- what the job gets for its run: MLflow's variables, SMTRAIN_MLFLOW, the MLflow client -------------------------

def _plan(tmp_path: Path, tracking: dict[str, Any], name: str = "job.yaml", **more: Any):
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "tracking": tracking, **more},
                      name=name)
    return build_plan(load_spec(spec, env={}), CATALOG)


def _requirements(plan) -> str:
    from smtrain.bundle.request import check_bundle

    found = [f for f in check_bundle(plan).files if f.path == "requirements.txt"]
    if not found:
        return ""
    return (found[0].content or Path(found[0].source).read_bytes()).decode()


def test_a_uri_job_gets_mlflows_variables_its_facts_and_the_pinned_client(tmp_path):
    import smtrain as library

    plan = _plan(tmp_path, {"mlflow": "http://127.0.0.1:5000", "experiment": "mnist", "run": "first"},
                 output="s3://bucket/out")
    env = preview_request(plan)["Environment"]
    assert env["MLFLOW_TRACKING_URI"] == "http://127.0.0.1:5000" and env["MLFLOW_EXPERIMENT_NAME"] == "mnist"
    assert json.loads(env["SMTRAIN_MLFLOW"]) == {"image": plan.image_uri, "smtrain": library.__version__,
                                                 "output": "s3://bucket/out", "run": "first"}
    assert plan.image_uri and "tensorflow-training" in plan.image_uri
    assert _requirements(plan) == ("# added by smtrain: tracking.mlflow (the MLflow client for the job's run)\n"
                                   "mlflow-skinny==3.17.2\n")
    shown = smtrain("plan", str(tmp_path / "job.yaml")).stdout.splitlines()
    assert "                the chief logs one run; requirements.txt gets mlflow-skinny==3.17.2" in shown


def test_an_arn_job_gets_the_arn_as_tracking_uri_and_the_sagemaker_plugin(tmp_path):
    plan = _plan(tmp_path, {"mlflow": ARN, "experiment": "mnist"})
    request = preview_request(plan)
    assert request["MlflowConfig"] == {"MlflowResourceArn": ARN, "MlflowExperimentName": "mnist"}
    assert request["Environment"]["MLFLOW_TRACKING_URI"] == ARN
    assert "run" not in json.loads(request["Environment"]["SMTRAIN_MLFLOW"])  # the job's name names it
    assert _requirements(plan).splitlines()[1:] == ["mlflow-skinny==3.17.2", "sagemaker-mlflow==0.5.0"]


def test_a_local_output_is_the_models_place_on_this_machine(tmp_path):
    plan = _plan(tmp_path, {"mlflow": "http://127.0.0.1:5000"}, output="out")
    settings = json.loads(preview_request(plan)["Environment"]["SMTRAIN_MLFLOW"])
    assert settings["output"] == str((tmp_path / "out").resolve())


def test_a_users_own_mlflow_line_is_kept_and_no_tracking_adds_nothing(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('hi')\n")
    (tmp_path / "src" / "requirements.txt").write_text("mlflow-skinny>=2.9\n")
    own = {"code": {"source_dir": "src", "entry_point": "train.py"}}
    plan = _plan(tmp_path, {"mlflow": ARN}, **own)
    assert _requirements(plan) == ("mlflow-skinny>=2.9\n# added by smtrain: tracking.mlflow (the MLflow client for "
                                   "the job's run)\nsagemaker-mlflow==0.5.0\n")
    untracked = _plan(tmp_path, {}, name="none.yaml", **own)
    assert _requirements(untracked) == "mlflow-skinny>=2.9\n"
    assert not any(k.startswith(("MLFLOW_", "SMTRAIN_MLFLOW")) for k in preview_request(untracked).get("Environment",
                                                                                                     {}))


def test_each_trial_names_the_tuning_job_whose_parent_run_it_is_under(tmp_path):
    from smtrain.plan.tuning import build_tuning_plan
    from smtrain.render.tuning_request import render_tuning_request

    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "tuning": TUNING,
                                 "tracking": {"mlflow": "https://mlflow.example.com", "run": "same-for-all"}})
    loaded = load_spec(spec, env={})
    tp = build_tuning_plan(loaded, build_plan(loaded, CATALOG))
    request = render_tuning_request(tp, "tune-1", "s3://bucket/source.tar.gz")
    settings = json.loads(request["TrainingJobDefinition"]["Environment"]["SMTRAIN_MLFLOW"])
    assert settings["tuning"] == "tune-1" and "run" not in settings


def test_a_local_run_of_an_arn_job_leaves_managed_mlflow_out(tmp_path):
    from smtrain.local.request import local_request, render_local

    plan = _plan(tmp_path, {"mlflow": ARN, "experiment": "mnist"}, output="out",
                 inputs={"train": str(tmp_path)})
    request = local_request(plan, "local-1")
    body = render_local(request)
    assert "MlflowConfig" not in body
    assert not any(k.startswith(("MLFLOW_", "SMTRAIN_MLFLOW")) for k in body.get("Environment", {}))
    assert "requirements.txt" not in {f.path for f in request.bundle.files}


def test_a_long_output_path_leaves_the_settings_within_sagemakers_limit(tmp_path):
    # 512 characters is EnvironmentValue's limit: past it the output (the model_uri tag's base) is left out.
    def settings(output: str, name: str) -> str:
        plan = _plan(tmp_path, {"mlflow": "http://127.0.0.1:5000", "run": "r" * 256}, name=name, output=output)
        return preview_request(plan)["Environment"]["SMTRAIN_MLFLOW"]

    at = settings("s3://bucket/" + "a" * 87, "at.yaml")
    assert len(at) == 512 and "output" in json.loads(at)  # at the limit: kept
    past = settings("s3://bucket/" + "a" * 88, "past.yaml")
    assert len(past) < 512 and set(json.loads(past)) == {"image", "smtrain", "run"}
    below = settings("s3://bucket/out", "below.yaml")
    assert set(json.loads(below)) == {"image", "smtrain", "output", "run"}
