"""A TensorFlow image from smtrain's data against the SageMaker SDK v2: the URI composed the way the SDK composes
its own, and a 2.21 job's dry run carrying it, valid for the service model."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.tf_images import image_uri, load_table
from smtrain.plan.tf_versions import image_uri as sdk_table_uri
from smtrain.sagemaker import submit as submission
from smtrain.spec.model import load_spec
from tests.render.test_sdk_oracle import assert_smtrain_renders_what_the_sdk_does
from tests.spec.inprocess import run
from tests.support.specfiles import write_spec

CATALOG = load_catalog()
TODAY = date(2026, 11, 23)


@pytest.fixture(scope="module")
def sdk_retrieve():
    import os

    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    from sagemaker import image_uris

    return image_uris.retrieve


@pytest.mark.parametrize("region", ["us-east-1", "cn-north-1"])
def test_the_composition_is_the_sdks_on_a_version_it_knows(region, sdk_retrieve):
    sdk = sdk_retrieve("tensorflow", region, version="2.19", py_version="py312", instance_type="ml.p4d.24xlarge",
                       image_scope="training")
    assert sdk == sdk_table_uri("2.19", "py312", region, "ml.p4d.24xlarge")  # smtrain's copy of the SDK's table
    # 2.21 (SDK v2 has no entry): the same registry and repository, the table's tag.
    assert image_uri(load_table().find("2.21"), region) == sdk.rsplit(":", 1)[0] + \
        ":2.21.0-gpu-py312-cu129-amzn2023-sagemaker"


@pytest.fixture(scope="module")
def create_training_job_shape():
    import botocore.session

    return botocore.session.get_session().get_service_model("sagemaker").operation_model(
        "CreateTrainingJob").input_shape


@pytest.mark.parametrize("changes", [{"compute": {"instance_type": "ml.g5.xlarge"}},
                                     {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2}}],
                         ids=["one-node", "mwms"])
def test_a_2_21_dry_run_carries_the_tables_image(changes, tmp_path, create_training_job_shape):
    from botocore.validate import ParamValidator

    spec = write_spec(tmp_path, {**changes, "tensorflow": {"version": "2.21"}})
    plan = build_plan(load_spec(spec, env={}), CATALOG, today=TODAY)
    body = submission.dry_run(plan, "tf-221-20260101-000000-abcd")["request"]
    assert body["AlgorithmSpecification"]["TrainingImage"] == plan.image_uri == image_uri(
        load_table().find("2.21"), "us-east-1")
    report = ParamValidator().validate(body, create_training_job_shape)
    assert not report.has_errors(), report.generate_report()
    # The preview (validate, plan) holds the same request, image included.
    assert_smtrain_renders_what_the_sdk_does(spec)


def test_submit_dry_run_shows_the_image_and_warns_past_end_of_patch(tmp_path: Path):
    default = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}, name="default.yaml")
    default.write_text(default.read_text().replace('tensorflow:\n  version: \'2.21\'\n', ""))
    assert "tensorflow" not in default.read_text()
    out = run("submit", str(default), "--dry-run")
    assert out.code == 0, out.output
    assert "2.21.0-gpu-py312-cu129-amzn2023-sagemaker" in out.stdout and "warning: " not in out.stderr
    old = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "tensorflow": {"version": "2.19"}},
                     name="old.yaml")
    out = run("submit", str(old), "--dry-run")
    assert out.code == 0 and "tensorflow-training:2.19-gpu-py312" in out.stdout
    assert "warning: " in out.stderr and "2026-03-11" in out.stderr and "move to 2.21" in out.stderr
