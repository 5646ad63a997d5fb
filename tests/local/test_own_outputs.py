"""A local run's outputs are its own: never overwritten by a later run, never bundled into the next job.

Outputs sit as SageMaker puts them under an S3 output, <output>/<job>/output/{model,output}.tar.gz,
and a run whose <output>/<job> exists is refused (exit 2) before anything is made or started. The
directories a run writes are marked, so that neither they nor SMTRAIN_HOME ship in a later bundle,
wherever they lie inside the source dir.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtrain.bundle.own_places import MARKER
from smtrain.errors import UserError
from smtrain.local.backend import LocalBackend, local_request
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from tests.local.support import make_plan, spec_file
from tests.support.cli_runner import smtrain


def tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_a_second_home_cannot_overwrite_a_jobs_model(tmp_path: Path) -> None:
    spec = spec_file(tmp_path)  # output: out, beside the spec
    first = LocalBackend(tmp_path / "home-a").run(local_request(make_plan(tmp_path), "twin"), grace=1)
    assert first.status == "Completed", first.failure_reason
    job_output = tmp_path / "out" / "twin"
    assert Path(first.model_artifacts) == job_output / "output" / "model.tar.gz"
    assert Path(first.extra["output_artifacts"]) == job_output / "output" / "output.tar.gz"
    written = tree(tmp_path / "out")

    proc = smtrain("submit", str(spec), "--local", "--job-name", "twin", env={"SMTRAIN_HOME": str(tmp_path / "home-b")})
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and f"{job_output} already exists" in line and "--job-name" in line
    assert tree(tmp_path / "out") == written  # the first job's archives, byte for byte
    assert not (tmp_path / "home-b").exists()
    listed = smtrain("list", "--local", env={"SMTRAIN_HOME": str(tmp_path / "home-b")})
    assert listed.returncode == 0 and listed.stdout == ""


@pytest.mark.parametrize(("output", "job_output"), [
    ("out", "out/taken"),  # a directory a person made, empty
    ("file://{tmp}/deep/er/out", "deep/er/out/taken"),
])
def test_an_existing_job_directory_under_the_output_is_refused_before_anything_is_made(
        tmp_path: Path, output: str, job_output: str) -> None:
    plan = make_plan(tmp_path, {"output": output.format(tmp=tmp_path)})
    (tmp_path / job_output).mkdir(parents=True)
    backend = LocalBackend(tmp_path / "home")
    with pytest.raises(UserError, match="already exists") as refused:
        backend.run(local_request(plan, "taken"), grace=1)
    assert refused.value.code == 2 and str(tmp_path / job_output) in str(refused.value)
    assert not (tmp_path / "home").exists() and tree(tmp_path / job_output) == {}
    assert sorted(p.name for p in (tmp_path / job_output).parent.iterdir()) == ["taken"]  # no source/ either


def plan_of(spec: Path):  # noqa: ANN201 - a Plan
    return build_plan(load_spec(spec), load_catalog(None, None))


@pytest.mark.slow
def test_outputs_and_records_inside_the_source_dir_never_reach_the_next_bundle(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The source dir holds both places, two levels down: a job's output and SMTRAIN_HOME.
    monkeypatch.setenv("SMTRAIN_HOME", str(tmp_path / "src" / "state" / "home"))
    spec = spec_file(tmp_path, {"output": "src/runs/local/out"})
    before = local_request(plan_of(spec), "first").bundle
    job = LocalBackend().run(local_request(plan_of(spec), "first"), grace=1)
    assert job.status == "Completed", job.failure_reason
    out = tmp_path / "src" / "runs" / "local" / "out"
    assert (out / "first" / "output" / "model.tar.gz").is_file()
    record = json.loads((tmp_path / "src" / "state" / "home" / "local-jobs" / "first" / "record.json").read_text())
    assert record["bundle_sha256"] == before.sha256

    after = local_request(plan_of(spec), "second").bundle
    assert after.sha256 == before.sha256
    assert {f.path for f in after.files if f.origin == "source"} == {"standin.py"}
    # What the run wrote is marked: with the output and the home moved elsewhere, it still stays out.
    for written in (out / "first", out / "source" / before.sha256, tmp_path / "src" / "state" / "home" / "local-jobs"):
        assert (written / MARKER).is_file(), written
    monkeypatch.setenv("SMTRAIN_HOME", str(tmp_path / "home"))
    moved = spec_file(tmp_path, {"output": "results"})
    assert local_request(plan_of(moved), "third").bundle.sha256 == before.sha256
