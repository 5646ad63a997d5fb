"""The spec's `tensorboard:` field: an S3 URI, or false for none; left out, the default place (in the plan)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.cli_runner import smtrain
from tests.support.specfiles import BASE_TEXT


def load(tmp_path: Path, extra: str = "", overrides: tuple[str, ...] = ()) -> object:
    path = tmp_path / "job.yaml"
    path.write_text(BASE_TEXT + extra)
    return load_spec(path, overrides, env={}).spec


def refusal(tmp_path: Path, extra: str = "", overrides: tuple[str, ...] = ()) -> list[str]:
    with pytest.raises(SpecError) as info:
        load(tmp_path, extra, overrides)
    return [p.render() for p in info.value.problems]


def test_left_out_it_is_none_and_the_plan_decides(tmp_path: Path) -> None:
    assert load(tmp_path).tensorboard is None


@pytest.mark.parametrize("written", ["false", "off", "no", "False", "OFF"])
def test_false_words_turn_it_off(tmp_path: Path, written: str) -> None:
    assert load(tmp_path, f"tensorboard: {written}\n").tensorboard is False
    # --set gives text, typed the same way
    assert load(tmp_path, overrides=(f"tensorboard={written}",)).tensorboard is False


def test_an_s3_uri_is_kept_as_written(tmp_path: Path) -> None:
    assert load(tmp_path, "tensorboard: s3://my-bucket/tb/\n").tensorboard == "s3://my-bucket/tb/"
    assert load(tmp_path, overrides=("tensorboard=s3://my-bucket/x",)).tensorboard == "s3://my-bucket/x"
    assert load(tmp_path, "tensorboard: s3://my-bucket/tb\n", overrides=("tensorboard=null",)).tensorboard is None


@pytest.mark.parametrize(("extra", "needle"), [
    ("tensorboard: true\n", "leave the field out for the default"),
    ("tensorboard: on\n", "leave the field out for the default"),
    ("tensorboard: s3:/my-bucket/tb\n", "is not an S3 URI or false"),
    ("tensorboard: ./tb\n", "is not an S3 URI or false"),
    ("tensorboard: [s3://my-bucket/tb]\n", "is not an S3 URI or false"),
    ("tensorboard: 3\n", "is not an S3 URI or false"),
])
def test_anything_else_is_refused_at_its_line(tmp_path: Path, extra: str, needle: str) -> None:
    line = BASE_TEXT.count("\n") + 1
    [problem] = refusal(tmp_path, extra)
    assert problem.startswith(f"{tmp_path / 'job.yaml'}:{line}:14: tensorboard: "), problem
    assert needle in problem


def test_validate_names_file_line_and_field_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(BASE_TEXT + "tensorboard: http://example.com/tb\n")
    proc = smtrain("validate", str(path))
    assert proc.returncode == 2
    assert f"{path}:{BASE_TEXT.count(chr(10)) + 1}:14: tensorboard: " in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_schema_documents_it() -> None:
    proc = smtrain("schema")
    assert proc.returncode == 0, proc.stderr
    field = json.loads(proc.stdout)["properties"]["tensorboard"]
    assert "TensorBoard" in field["description"] and "<output>/tensorboard" in field["description"]
