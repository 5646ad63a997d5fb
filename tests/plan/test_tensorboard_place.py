"""Where a job's TensorBoard event files go: TensorBoardOutputConfig in the request preview, `plan`'s
text and JSON, and a limit it breaks reported at the spec field behind it (CheckpointConfig's way)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtrain.cli.render import plan_text
from smtrain.plan.catalog_files import load_catalog
from smtrain.render.checked_plan import checked_plan
from smtrain.render.training_request import preview_request
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.cli_runner import smtrain
from tests.support.specfiles import write_spec

CATALOG = load_catalog()
GPU = {"compute": {"instance_type": "ml.g5.xlarge"}}
IN_CONTAINER = "/opt/ml/output/tensorboard"


def plan_for(tmp_path: Path, changes: dict):
    return checked_plan(load_spec(write_spec(tmp_path, {**GPU, **changes}), env={}), CATALOG)


@pytest.mark.parametrize(("changes", "s3_path"), [
    ({}, "s3://my-bucket/out/tensorboard"),  # the default: beside the model and output
    ({"output": "s3://my-bucket/out/"}, "s3://my-bucket/out/tensorboard"),  # one slash, as the SDK joins
    ({"tensorboard": "s3://my-bucket/tb/"}, "s3://my-bucket/tb/"),  # as written, as the SDK sends it
    ({"tensorboard": False}, None),
    ({"output": "out"}, None),  # a local output (submit --local): the event files stay on the host
    ({"output": "out", "tensorboard": "s3://my-bucket/tb"}, "s3://my-bucket/tb"),
])
def test_the_request_carries_tensorboard_output_config(tmp_path: Path, changes: dict, s3_path: str | None) -> None:
    plan = plan_for(tmp_path, changes)
    request = preview_request(plan)
    if s3_path is None:
        assert "TensorBoardOutputConfig" not in request
    else:
        assert request["TensorBoardOutputConfig"] == {"S3OutputPath": s3_path, "LocalPath": IN_CONTAINER}
    where = json.loads(json.dumps(plan.summary()))["tensorboard"]
    assert where["s3_output_path"] == s3_path and where["container_path"] == IN_CONTAINER
    if s3_path is None:
        assert where["event_files"] is None
    else:  # SageMaker's own layout, under the job's name (a template before submit)
        assert where["event_files"] == f"{s3_path.rstrip('/')}/test-job-yyyymmdd-HHMMSS-xxxx/tensorboard-output/"


def test_plan_text_says_where_the_event_files_go(tmp_path: Path) -> None:
    on = plan_text(plan_for(tmp_path, {}))
    assert ("  tensorboard   s3://my-bucket/out/tensorboard/test-job-yyyymmdd-HHMMSS-xxxx/tensorboard-output/ "
            "(`smtrain tensorboard JOB` shows them)") in on.splitlines()
    off = plan_text(plan_for(tmp_path, {"tensorboard": "off"}))
    assert "  tensorboard   not kept in S3 (tensorboard: false); `submit --local` keeps them in the chief host's " \
           "output/tensorboard" in off.splitlines()


def test_plan_json_through_the_cli(tmp_path: Path) -> None:
    proc = smtrain("plan", str(write_spec(tmp_path, GPU)), "-o", "json", "--set", "tensorboard=s3://my-bucket/tb")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tensorboard"]["s3_output_path"] == "s3://my-bucket/tb"


def _problems(tmp_path: Path, changes: dict) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as info:
        plan_for(tmp_path, changes)
    return [(".".join(map(str, p.path)), p.render()) for p in info.value.problems]


def test_a_limit_of_the_own_path_is_reported_at_the_tensorboard_line(tmp_path: Path) -> None:
    [(field, text)] = _problems(tmp_path, {"tensorboard": "s3://my-bucket/" + "t" * 1010})
    assert field == "tensorboard" and "TensorBoardOutputConfig.S3OutputPath" in text
    line = next(i for i, row in enumerate((tmp_path / "job.yaml").read_text().splitlines(), 1)
                if row.startswith("tensorboard:"))
    assert f"job.yaml:{line}:" in text


def test_a_limit_of_the_default_path_is_reported_at_the_output_it_comes_from(tmp_path: Path) -> None:
    # The output fits (1015 characters of at most 1024); <output>/tensorboard does not.
    found = _problems(tmp_path, {"output": "s3://my-bucket/" + "o" * 1000})
    assert [field for field, _ in found] == ["output"]
    assert "TensorBoardOutputConfig.S3OutputPath" in found[0][1]
    # Without TensorBoard output the same output is fine.
    assert plan_for(tmp_path, {"output": "s3://my-bucket/" + "o" * 1000, "tensorboard": False}).nodes == 1
