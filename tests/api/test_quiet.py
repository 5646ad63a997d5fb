"""The library prints nothing: results are returned, notes and warnings are data (the CLI shows them)."""

from __future__ import annotations

from pathlib import Path

import pytest

import smtrain
from tests.support import ROOT
from tests.support.specfiles import write_spec


def test_plan_dry_run_validate_and_their_refusals_print_nothing(tmp_path: Path,
                                                                capfd: pytest.CaptureFixture[str]) -> None:
    # capfd: what Python writes to sys.stdout/stderr and what anything writes to the file descriptors.
    # A spec with a warning (a hyperparameter the bundled entrypoint ignores) and one with local places.
    warned = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2},
                                   "hyperparameters": {"unknown_knob": 3}})
    planned = smtrain.plan(warned)
    assert planned.warnings  # there was something to say, and it was returned
    smtrain.dry_run(warned, job_name="api-quiet-1")
    assert smtrain.validate(warned).warnings
    smtrain.load(ROOT / "configs" / "local-demo.yaml")
    with pytest.raises(smtrain.SpecError):
        smtrain.dry_run(ROOT / "configs" / "local-demo.yaml")
    with pytest.raises(smtrain.SpecError):
        smtrain.plan({"name": "x"})
    repr(planned), planned._repr_html_()
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
