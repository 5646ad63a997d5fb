"""tensorflow.keras: which Keras the code runs on, what the job gets for Keras 2 on a 2.16+ image (the variable, the
tf-keras requirement matched to the image), the refusals, and the requirement in the bundle and the local run."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from smtrain.bundle.job_requirements import MARKER, split_added
from smtrain.bundle.request import check_bundle, make_request
from smtrain.cli.render import plan_text
from smtrain.local.job_env import _for_this_tensorflow
from smtrain.plan.keras_choice import image_keras
from tests.plan.test_program import WRAPPED, plan_for, refused, spec_path

KERAS_2_ON = {**WRAPPED, "tensorflow": {"version": "2.19", "keras": 2}}


@pytest.mark.parametrize("version, major", [("2.13", 2), ("2.15", 2), ("2.16", 3), ("2.21", 3), (None, None)])
def test_the_images_own_keras_changes_at_tensorflow_2_16(version, major):
    assert image_keras(version) == major


def test_keras_2_on_a_keras_3_image_gets_tf_keras_of_the_images_version_and_the_variable(tmp_path):
    plan = plan_for(tmp_path, KERAS_2_ON)
    assert plan.keras.summary() == {"major": 2, "through": "tf_keras", "requirement": "tf-keras~=2.19.0"}
    assert plan.environment["TF_USE_LEGACY_KERAS"] == "1"
    assert plan.summary()["tensorflow"]["keras"]["requirement"] == "tf-keras~=2.19.0"
    assert "Keras 2 as written: tf_keras under TF_USE_LEGACY_KERAS=1, tf-keras~=2.19.0 added" in plan_text(plan)


@pytest.mark.parametrize("tensorflow, summary", [
    ({"version": "2.14", "keras": 2}, {"major": 2, "through": "tf.keras", "requirement": None}),
    ({"version": "2.21", "keras": 3}, {"major": 3, "through": "tf.keras", "requirement": None}),
    ({"version": "2.21"}, {"major": 3, "through": "tf.keras", "requirement": None}),
    ({"version": "2.14"}, {"major": 2, "through": "tf.keras", "requirement": None}),
])
def test_the_images_own_keras_adds_nothing(tmp_path, tensorflow, summary):
    plan = plan_for(tmp_path, {**WRAPPED, "tensorflow": tensorflow})
    assert plan.keras.summary() == summary
    assert ("TF_USE_LEGACY_KERAS" in plan.environment) == (tensorflow.get("keras") == 2)  # 2.14 ignores it
    assert "Keras 2 as written" not in plan_text(plan)


def test_keras_3_on_an_image_of_keras_2_is_refused_at_its_line(tmp_path):
    [problem] = refused(tmp_path, {**WRAPPED, "tensorflow": {"version": "2.14", "keras": 3}})
    assert "tensorflow.keras: TensorFlow 2.14 has Keras 2 only" in problem and "job.yaml:" in problem


@pytest.mark.parametrize("value", [1, 4, "2", "three"])
def test_keras_takes_2_or_3_only(tmp_path, value):
    problems = refused(tmp_path, {**WRAPPED, "tensorflow": {"version": "2.19", "keras": value}})
    assert any("tensorflow.keras" in p for p in problems), problems


def test_the_spec_may_not_set_the_variable_itself_beside_keras_2(tmp_path):
    problems = refused(tmp_path, {**KERAS_2_ON, "environment": {"TF_USE_LEGACY_KERAS": "1"}})
    assert any("smtrain sets TF_USE_LEGACY_KERAS for this job (from tensorflow.keras)" in p for p in problems)


def _requirements(tmp_path: Path, changes: dict) -> str:
    tmp_path.mkdir(exist_ok=True)
    plan = plan_for(tmp_path, changes)
    with tarfile.open(fileobj=io.BytesIO(make_request(plan).bundle.data)) as tar:
        return tar.extractfile("requirements.txt").read().decode()


def test_the_bundles_requirements_get_the_line_after_the_users_own(tmp_path):
    assert _requirements(tmp_path / "a", KERAS_2_ON) == f"{MARKER}tensorflow.keras: 2 (Keras 2 through tf_keras)\n" \
                                                         "tf-keras~=2.19.0\n"
    (tmp_path / "b" / "src").mkdir(parents=True)
    (tmp_path / "b" / "src" / "requirements.txt").write_text("pandas==2.2.0")  # no newline at its end
    text = _requirements(tmp_path / "b", KERAS_2_ON)
    assert text.startswith("pandas==2.2.0\n" + MARKER) and text.endswith("tf-keras~=2.19.0\n")
    assert split_added(text) == ("pandas==2.2.0\n", ["tf-keras~=2.19.0"])


def test_a_tf_keras_the_user_pins_is_left_to_the_user(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "requirements.txt").write_text("TF_Keras==2.19.0\n")
    plan = plan_for(tmp_path, KERAS_2_ON)
    [req] = [f for f in check_bundle(plan).files if f.path == "requirements.txt"]
    assert req.content is None and req.origin == "source"  # the user's file, unchanged


def test_no_keras_setting_leaves_the_users_requirements_alone(tmp_path):
    spec_path(tmp_path, WRAPPED)
    (tmp_path / "src" / "requirements.txt").write_text("pandas\n")
    plan = plan_for(tmp_path, WRAPPED)
    assert [f.content for f in check_bundle(plan).files if f.path == "requirements.txt"] == [None]


@pytest.mark.parametrize("line, tensorflow, local", [
    ("tf-keras~=2.19.0", "2.21.0", "tf-keras~=2.21.0"),
    ("tf-keras~=2.19.0", "2.16.2", "tf-keras~=2.16.0"),
    ("tf-keras~=2.19.0", "2.15.1", None),  # this machine's tf.keras is Keras 2 already
    ("tf-keras", None, "tf-keras"),
    ("mlflow-skinny==3.17.2", "2.15.1", "mlflow-skinny==3.17.2"),  # tracking.mlflow's client: whatever TensorFlow
    ("sagemaker-mlflow==0.5.0", "2.21.0", "sagemaker-mlflow==0.5.0"),
])
def test_a_local_run_installs_tf_keras_for_its_own_tensorflow(line, tensorflow, local):
    assert _for_this_tensorflow(line, tensorflow) == local


def test_split_added_without_smtrains_lines_is_the_file_as_it_is():
    assert split_added("numpy\n# a comment\n") == ("numpy\n# a comment\n", [])
