"""smtrain.dry_run: the request `smtrain submit --dry-run -o json` shows (less its preflight list), and the
same refusals before it: a spec's places on this machine, a certain failure in the code, --strict's warnings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import smtrain
from tests.preflight.test_preflight_cli import SCRIPT
from tests.support import ROOT
from tests.support.specfiles import write_spec

MWMS = ROOT / "configs" / "mwms.yaml"

# SCRIPT: argparse options, a MirroredStrategy on several nodes and a hard-coded /opt/ml path (two warnings).


def own_script(tmp_path: Path, script: str, **changes: object) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(script)
    spec: dict[str, object] = {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2},
                               "code": {"source_dir": "src", "entry_point": "train.py"},
                               "hyperparameters": {"epochs": 2}}
    spec.update(changes)
    return write_spec(tmp_path, spec)


def test_dry_run_is_submit_dry_run_s_document() -> None:
    proc = subprocess.run([sys.executable, "-m", "smtrain", "submit", str(MWMS), "--dry-run", "--job-name",
                           "api-dry-run-1", "-o", "json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document.pop("preflight") == []
    rendered = smtrain.dry_run(MWMS, job_name="api-dry-run-1")
    assert rendered == document
    assert rendered["request"]["TrainingJobName"] == "api-dry-run-1"
    assert rendered["request"]["ResourceConfig"]["InstanceCount"] == 2
    # A Planned goes in as it is (no second plan), and gives the same request.
    assert smtrain.dry_run(smtrain.plan(MWMS), job_name="api-dry-run-1") == rendered


def test_a_spec_with_places_here_is_refused_at_its_fields() -> None:
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.dry_run(ROOT / "configs" / "local-demo.yaml")
    err = caught.value
    assert err.code == 2
    assert [p.path for p in err.problems] == [("inputs", "train", "uri"), ("inputs", "validation", "uri"), ("output",)]
    assert all("`submit --local`" in p.message for p in err.problems)
    assert all(p.location is not None and p.location.line for p in err.problems)


def test_a_bad_job_name_is_refused_before_anything() -> None:
    with pytest.raises(smtrain.UserError) as caught:
        smtrain.dry_run(MWMS, job_name="no_underscores!")
    assert caught.value.code == 2 and "no_underscores!" in str(caught.value)


def test_a_certain_failure_raises_preflight_error_with_its_findings(tmp_path: Path) -> None:
    script = SCRIPT.replace('parser.add_argument("--model_dir")', 'parser.add_argument("--batch-size", type=int)\n'
                            'parser.add_argument("--model_dir")')
    spec = own_script(tmp_path, script, hyperparameters={"epochs": 2, "batch_size": 64})
    with pytest.raises(smtrain.PreflightError) as caught:
        smtrain.dry_run(spec)
    err = caught.value
    assert isinstance(err, smtrain.UserError) and err.code == 2
    assert str(err) == "1 preflight error: the job would fail at that line; nothing was sent."
    assert [(f.file, f.line, f.rule, f.is_error) for f in err.findings] == [
        ("train.py", 8, "undeclared-hyperparameters", True)]


def test_strict_refuses_warnings_that_pass_otherwise(tmp_path: Path) -> None:
    spec = own_script(tmp_path, SCRIPT)
    rendered = smtrain.dry_run(spec, job_name="api-strict-1")
    assert rendered["request"]["TrainingJobName"] == "api-strict-1"
    with pytest.raises(smtrain.PreflightError) as caught:
        smtrain.dry_run(spec, strict=True)
    assert [(f.line, f.rule) for f in caught.value.findings] == [(8, "mirrored-multi-node"), (9, "opt-ml-path")]
    assert "2 preflight warnings and strict" in str(caught.value)
