"""Issue 14, capacity, retries and keys: compute.prefer (InstancePreferences), training_plan, max_pending,
max_retry_attempts, output_kms_key and volume_kms_key in the request the dry run shows (smtrain's renderer), the
preview, botocore's model, and what a live (moto) server receives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smtrain.plan.catalog_files import load_catalog
from smtrain.render.checked_plan import checked_plan
from smtrain.render.training_request import preview_request
from smtrain.sagemaker import submit as submission
from smtrain.spec.model import load_spec
from tests.support.cli_runner import smtrain
from tests.support.moto_server import BUCKET, ROLE, MotoServer
from tests.support.specfiles import write_spec

CATALOG = load_catalog()
JOB = "capacity-job-20260101-000000-abcd"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p4d-week"

# One spec per way: a fallback list (one entry with a training plan), and one instance with the rest.
PREFER: dict[str, Any] = {"compute": {
    "prefer": [{"instance_type": "ml.p4d.24xlarge", "count": 2, "training_plan": PLAN_ARN},
               {"instance_type": "ml.g5.12xlarge", "count": 1}],
    "max_pending": "2h", "max_retry_attempts": 3}, "output_kms_key": "alias/smtrain-out"}
SINGLE: dict[str, Any] = {"compute": {
    "instance_type": "ml.p3.16xlarge", "training_plan": PLAN_ARN, "max_pending": "1d", "max_retry_attempts": 30,
    "volume_kms_key": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"},
    "output_kms_key": "1234abcd-12ab-34cd-56ef-1234567890ab"}


def rendered_and_preview(spec_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The dry run's request (what submit sends), and the preview validate and plan check, for the same name and
    bundle place."""
    plan = checked_plan(load_spec(spec_path, env={}), CATALOG)
    prepared = submission.prepare(plan, JOB)
    return prepared.body, preview_request(plan, JOB, prepared.request.source_uri)


@pytest.fixture(scope="module")
def shape() -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model("sagemaker").operation_model(
        "CreateTrainingJob").input_shape


def test_a_fallback_list_reaches_the_request_in_place_of_the_instance(tmp_path, shape):
    from botocore.validate import ParamValidator

    rendered, preview = rendered_and_preview(write_spec(tmp_path, PREFER))
    assert preview == rendered
    resources = rendered["ResourceConfig"]
    # The API: InstancePreferences excludes InstanceType; a count per preference excludes the job's count.
    assert "InstanceType" not in resources and "InstanceCount" not in resources
    assert resources["InstancePreferences"] == [
        {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2, "TrainingPlanArns": [PLAN_ARN]},
        {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 1}]
    assert rendered["StoppingCondition"]["MaxPendingTimeInSeconds"] == 7200
    assert rendered["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert rendered["OutputDataConfig"]["KmsKeyId"] == "alias/smtrain-out"
    assert "EnableManagedSpotTraining" not in rendered
    # One request for both choices: the two-node choice makes it MultiWorkerMirrored for both.
    hps = {k: json.loads(v) for k, v in rendered["HyperParameters"].items()}
    assert hps["sagemaker_multi_worker_mirrored_strategy_enabled"] is True
    report = ParamValidator().validate(rendered, shape)
    assert not report.has_errors(), report.generate_report()


def test_the_request_carries_retries_keys_and_the_training_plan(tmp_path, shape):
    from botocore.validate import ParamValidator

    rendered, preview = rendered_and_preview(write_spec(tmp_path, SINGLE))
    assert preview == rendered
    resources = rendered["ResourceConfig"]
    assert (resources["InstanceType"], resources["InstanceCount"]) == ("ml.p3.16xlarge", 1)
    assert resources["TrainingPlanArn"] == PLAN_ARN
    assert resources["VolumeKmsKeyId"] == SINGLE["compute"]["volume_kms_key"]
    assert rendered["StoppingCondition"]["MaxPendingTimeInSeconds"] == 86400
    assert rendered["RetryStrategy"] == {"MaximumRetryAttempts": 30}
    assert rendered["OutputDataConfig"]["KmsKeyId"] == SINGLE["output_kms_key"]
    report = ParamValidator().validate(rendered, shape)
    assert not report.has_errors(), report.generate_report()


def test_none_of_them_unless_the_spec_sets_them(tmp_path):
    rendered, _ = rendered_and_preview(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}))
    assert "RetryStrategy" not in rendered and "KmsKeyId" not in rendered["OutputDataConfig"]
    assert set(rendered["ResourceConfig"]) == {"InstanceType", "InstanceCount", "VolumeSizeInGB"}
    assert set(rendered["StoppingCondition"]) == {"MaxRuntimeInSeconds"}


def test_the_dry_run_shows_the_list(tmp_path):
    done = smtrain("submit", str(write_spec(tmp_path, PREFER)), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "first with capacity of 2 x ml.p4d.24xlarge or 1 x ml.g5.12xlarge" in done.stdout
    assert "max pending   7200 s" in done.stdout and "retries       3" in done.stdout


def test_the_server_receives_what_the_dry_run_shows(aws: MotoServer, tmp_path):
    spec = write_spec(tmp_path, {**PREFER, "inputs": {"train": f"s3://{BUCKET}/train"},
                                 "output": f"s3://{BUCKET}/out", "role": ROLE})
    env = aws.env(tmp_path)
    dry = smtrain("submit", str(spec), "--dry-run", "--job-name", "capacity-job", "-o", "json", env=env)
    assert dry.returncode == 0, dry.stderr
    sent = smtrain("submit", str(spec), "--job-name", "capacity-job", "-o", "json", env=env)
    assert sent.returncode == 0, sent.stderr
    # The same name, the same code: the very value the dry run showed, the bundle's place included.
    [received] = aws.control.create_requests
    assert received == json.loads(dry.stdout)["request"]
    assert received["ResourceConfig"]["InstancePreferences"][0]["TrainingPlanArns"] == [PLAN_ARN]
    assert received["StoppingCondition"]["MaxPendingTimeInSeconds"] == 7200
    assert received["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert received["OutputDataConfig"]["KmsKeyId"] == "alias/smtrain-out"


def test_status_names_the_type_sagemaker_picked_from_the_list():
    from smtrain.sagemaker.backend import job_from_description

    # DescribeTrainingJob of a job with InstancePreferences: no InstanceType, the selected one instead.
    info = job_from_description({"TrainingJobName": "j", "TrainingJobStatus": "InProgress", "ResourceConfig": {
        "VolumeSizeInGB": 30, "InstancePreferences": [{"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
                                                      {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 1}],
        "SelectedInstanceType": "ml.g5.12xlarge", "SelectedInstanceCount": 1}}, "us-east-1")
    assert (info.instance_type, info.instance_count) == ("ml.g5.12xlarge", 1)
