"""smtrain.validate -> Validation: `.valid`, and every problem of a spec file in one run as data."""

from __future__ import annotations

from pathlib import Path

import pytest

import smtrain
from tests.support import ROOT
from tests.support.specfiles import write_spec


def test_a_valid_spec() -> None:
    found = smtrain.validate(ROOT / "configs" / "mwms.yaml")
    assert isinstance(found, smtrain.Validation)
    assert found.valid and found.problems == [] and found.skipped == []
    assert found.plan is not None and found.plan.replicas == 16


def test_every_problem_in_one_run_by_file_line_and_field(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, {"compute": {"nodes": "x", "gpu": "Z99"}, "training": {"epochs": -1}})
    found = smtrain.validate(spec)
    assert not found.valid and found.plan is None
    where = {p.path: p.location for p in found.problems}
    assert set(where) >= {("compute", "nodes"), ("training", "epochs")}
    assert all(loc is not None and loc.source == str(spec) and loc.line for loc in where.values())
    assert found.skipped and "did not run" in found.skipped[0]


def test_overrides_apply_and_a_plan_problem_is_found(tmp_path: Path) -> None:
    spec = ROOT / "configs" / "mwms.yaml"
    assert smtrain.validate(spec, {"compute.nodes": 3}).plan.replicas == 24
    found = smtrain.validate(spec, ["compute.gpu=H100", "compute.gpus_per_node=16"])
    assert not found.valid and found.plan is None
    assert any(p.path[:1] == ("compute",) for p in found.problems)


def test_a_certain_failure_in_the_code_is_not_valid(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\n"
                                               "p.add_argument('--epochs', type=int)\nargs = p.parse_args()\n")
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                 "code": {"source_dir": "src", "entry_point": "train.py"}})
    found = smtrain.validate(spec)
    assert found.problems == [] and found.plan is not None
    assert not found.valid and [f.rule for f in found.findings if f.is_error] == ["undeclared-hyperparameters"]


def test_a_file_that_is_no_spec_raises(tmp_path: Path) -> None:
    bad = tmp_path / "job.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.validate(bad)
    [problem] = caught.value.problems
    assert caught.value.code == 2 and problem.location.source == str(bad) and problem.location.line


def test_a_mapping_is_refused_with_what_to_call_instead() -> None:
    from tests.support.specfiles import BASE

    with pytest.raises(TypeError, match="validate reads a spec file .*smtrain.load or smtrain.plan"):
        smtrain.validate(BASE)  # type: ignore[arg-type]
