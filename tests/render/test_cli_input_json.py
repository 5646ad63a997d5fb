"""The dry run's JSON `request` is the operation's input, unchanged: `aws sagemaker create-training-job
--cli-input-json` (and create-hyper-parameter-tuning-job) loads the file and checks it with botocore's
ParamValidator against the operation's input shape in the service model before sending. Here the same check
runs on what `smtrain submit SPEC --dry-run -o json` and `smtrain tune SPEC --dry-run -o json` print, for every
example config (those naming places on this machine through their s3:// twins), so a user can send the request
with their own tools.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.render.test_sdk_oracle import s3_twin
from tests.support import ROOT
from tests.support.cli_runner import smtrain

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
TUNING_CONFIGS = [c for c in CONFIGS if "tuning:" in c.read_text()]


@pytest.fixture(scope="module")
def input_shape() -> Any:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return lambda operation: model.operation_model(operation).input_shape


def dry_run(command: str, spec: Path) -> dict[str, Any]:
    proc = smtrain(command, str(spec), "--dry-run", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def as_cli_input(request: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """The request written to a file and read back, as `--cli-input-json file://request.json` reads it."""
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request, indent=2))
    return json.loads(path.read_text())


def errors(document: dict[str, Any], shape: Any) -> str:
    from botocore.validate import ParamValidator

    report = ParamValidator().validate(document, shape)
    return report.generate_report() if report.has_errors() else ""


def test_every_config_is_checked():
    assert len(CONFIGS) >= 10 and TUNING_CONFIGS  # a glob that finds nothing would pass every test below


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_a_dry_run_s_request_is_create_training_job_s_input(config: Path, tmp_path: Path, input_shape: Any):
    dry = dry_run("submit", s3_twin(config, tmp_path))
    request = as_cli_input(dry["request"], tmp_path)
    assert request == dry["request"] and request["TrainingJobName"] == dry["job_name"]
    assert errors(request, input_shape("CreateTrainingJob")) == ""


@pytest.mark.parametrize("config", TUNING_CONFIGS, ids=lambda p: p.name)
def test_a_tuning_dry_run_s_request_is_create_hyper_parameter_tuning_job_s_input(config: Path, tmp_path: Path,
                                                                                 input_shape: Any):
    dry = dry_run("tune", s3_twin(config, tmp_path))
    request = as_cli_input(dry["request"], tmp_path)
    assert request["HyperParameterTuningJobName"] == dry["tuning_job_name"]
    assert errors(request, input_shape("CreateHyperParameterTuningJob")) == ""


def test_the_check_refuses_what_is_not_the_operation_s_input(tmp_path: Path, input_shape: Any):
    # The validator bites: the whole dry-run document (its job_name, upload...) is not the input, nor is a
    # training request given to the tuning operation, nor a request missing a required member.
    dry = dry_run("submit", s3_twin(ROOT / "configs" / "mwms.yaml", tmp_path))
    assert "Unknown parameter in input: \"job_name\"" in errors(dry, input_shape("CreateTrainingJob"))
    assert "Missing required parameter" in errors(dry["request"], input_shape("CreateHyperParameterTuningJob"))
    without_role = {k: v for k, v in dry["request"].items() if k != "RoleArn"}
    assert "RoleArn" in errors(without_role, input_shape("CreateTrainingJob"))
