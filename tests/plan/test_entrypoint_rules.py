"""Specs that would start on SageMaker and fail in the bundled entrypoint's first minute are refused first."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.cli_runner import smtrain
from tests.support.specfiles import write_spec

CATALOG = load_catalog()


def outcome(tmp_path: Path, changes: dict, inputs: dict | None = None) -> tuple[list[str], list[str]]:
    """(errors, warnings), each rendered as `file:line:column: field: message`; `inputs` replaces the channels."""
    path = write_spec(tmp_path, changes)
    if inputs is not None:
        data = yaml.safe_load(path.read_text())
        data["inputs"] = inputs
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    try:
        plan = build_plan(load_spec(path, env={}), CATALOG)
    except SpecError as exc:
        return [p.render() for p in exc.problems], []
    return [], [w.render() for w in plan.warnings]


def only_error(tmp_path: Path, changes: dict, field: str, inputs: dict | None = None) -> str:
    errors, _ = outcome(tmp_path, changes, inputs)
    matching = [e for e in errors if f": {field}: " in e]
    assert len(matching) == 1, errors
    assert matching[0].startswith(f"{tmp_path / 'job.yaml'}:")  # file:line:column
    return matching[0]


@pytest.mark.parametrize("version", ["1.15", "2.1", "2.10"])
def test_tensorflow_the_entrypoint_does_not_run_on(tmp_path: Path, version: str) -> None:
    line = only_error(tmp_path, {"tensorflow": {"version": version}}, "tensorflow.version")
    assert "TensorFlow 2.11 to 2.21" in line and f"not {version}" in line


def test_python_older_than_3_9(tmp_path: Path) -> None:
    line = only_error(tmp_path, {"tensorflow": {"version": "2.11", "python": "py38",
                                                "image_uri": "123.dkr.ecr.us-east-1.amazonaws.com/tf:1"}},
                      "tensorflow.python")
    assert "Python 3.9 or newer" in line


def test_an_own_entry_point_is_not_held_to_the_entrypoints_needs(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("")
    errors, _ = outcome(tmp_path, {"tensorflow": {"version": "2.10"}, "inputs": {"training": "s3://my-bucket/x"},
                                   "training": {"model": "foo"},
                                   "code": {"source_dir": ".", "entry_point": "train.py"}})
    assert errors == []


def test_a_channel_named_training_instead_of_train(tmp_path: Path) -> None:
    line = only_error(tmp_path, {}, "inputs", inputs={"training": "s3://my-bucket/x"})
    assert "channel named train" in line and "rename inputs.training to inputs.train" in line


def test_no_channel_is_fine_for_synthetic_data(tmp_path: Path) -> None:
    assert outcome(tmp_path, {"training": {"data": "synthetic"}}, inputs={}) == ([], [])


def test_pipe_mode(tmp_path: Path) -> None:
    line = only_error(tmp_path, {"inputs": {"train": {"uri": "s3://my-bucket/t", "mode": "Pipe"}}},
                      "inputs.train.mode")
    assert "File or FastFile" in line


@pytest.mark.parametrize(("model", "hint"), [("foo", "use mlp, cnn, resnet50"), ("MLP", "did you mean 'mlp'")])
def test_unknown_models(tmp_path: Path, model: str, hint: str) -> None:
    assert hint in only_error(tmp_path, {"training": {"model": model}}, "training.model")


def _hooked(tmp_path: Path, model: str, files: dict[str, str]) -> dict:
    for rel, text in files.items():
        (tmp_path / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / rel).write_text(text)
    return {"training": {"model": model}, "code": {"source_dir": "src"}}


def test_a_model_hook_that_exists_passes(tmp_path: Path) -> None:
    changes = _hooked(tmp_path, "nets.small:build", {"nets/__init__.py": "", "nets/small.py": "def build(hp):\n  pass\n"})
    assert outcome(tmp_path, changes) == ([], [])


@pytest.mark.parametrize(("model", "files", "message"), [
    ("nets:build", {"other.py": ""}, "no nets.py in code.source_dir"),
    ("nets:build", {"nets.py": "def built(hp):\n  pass\n"}, "nets.py defines no build (did you mean 'built'?)"),
    ("nets:build", {"nets.py": "def build(:\n"}, "nets.py line 1"),
])
def test_a_model_hook_that_does_not_exist(tmp_path: Path, model: str, files: dict[str, str], message: str) -> None:
    assert message in only_error(tmp_path, _hooked(tmp_path, model, files), "training.model")


def test_a_model_hook_without_a_source_dir(tmp_path: Path) -> None:
    assert "set code.source_dir" in only_error(tmp_path, {"training": {"model": "nets:build"}}, "training.model")


def test_an_unknown_hyperparameter_is_a_warning_with_the_nearest_name(tmp_path: Path) -> None:
    errors, warnings = outcome(tmp_path, {"hyperparameters": {"momentun": 0.5}})
    assert errors == []
    [line] = warnings
    assert "hyperparameters.momentun" in line and "did you mean 'momentum'" in line


def test_unknown_hyperparameters_are_a_model_hooks_own(tmp_path: Path) -> None:
    changes = _hooked(tmp_path, "nets:build", {"nets.py": "def build(hp):\n  pass\n"})
    assert outcome(tmp_path, {**changes, "hyperparameters": {"width": 3}}) == ([], [])


def test_validate_refuses_through_the_cli(tmp_path: Path) -> None:
    proc = smtrain("validate", str(write_spec(tmp_path, {"tensorflow": {"version": "2.10"}})))
    assert proc.returncode == 2 and "job.yaml:" in proc.stderr and "tensorflow.version" in proc.stderr
    assert "Traceback" not in proc.stderr
