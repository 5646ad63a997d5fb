"""smtrain.plan -> Planned: the plan itself, `summary()` equal to `smtrain plan -o json`'s document, a one-line
repr, and an HTML table for Jupyter with every value masked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import smtrain
from tests.support import ROOT
from tests.support.specfiles import BASE, merged, write_spec

DB_PASSWORD = "canary-db-password-never-print"  # under a secret-looking name in the spec's environment

SCRIPT = """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--model_dir")
args = parser.parse_args()
rows = open("/home/me/{secret}/train.csv").read()
"""


def _cli_json(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "smtrain", *args, "-o", "json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("config", ["mwms.yaml", "tuning.yaml"])
def test_plan_is_the_plan_command_s_document(config: str) -> None:
    spec = ROOT / "configs" / config
    planned = smtrain.plan(spec)
    assert isinstance(planned, smtrain.Planned)
    assert planned.summary() == _cli_json("plan", str(spec))
    if config == "mwms.yaml":
        assert (planned.plan.replicas, planned.plan.nodes, planned.plan.instance.name) == (16, 2, "ml.p4d.24xlarge")
        assert planned.tuning is None
    else:
        assert planned.tuning is not None and "tuning" in planned.summary()


def test_overrides_change_the_plan_as_set_does() -> None:
    spec = ROOT / "configs" / "mwms.yaml"
    planned = smtrain.plan(spec, {"compute.nodes": 4})
    assert planned.plan.replicas == 32
    assert planned.summary() == _cli_json("plan", str(spec), "--set", "compute.nodes=4")
    assert smtrain.plan(spec, ["compute.nodes=1"]).plan.replicas == 8


def test_a_mapping_plans_as_its_file_does(tmp_path: Path) -> None:
    spec = merged(BASE, {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2}})
    from_dict = smtrain.plan(spec)
    from_file = smtrain.plan(write_spec(tmp_path, spec))
    assert from_dict.plan.replicas == from_file.plan.replicas == 8
    assert from_dict.summary()["instance"] == from_file.summary()["instance"]
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.plan(merged(BASE, {"compute": {"nodes": 0}}))
    assert caught.value.code == 2 and [p.path for p in caught.value.problems] == [("compute", "nodes")]


def test_repr_is_one_line() -> None:
    planned = smtrain.plan(ROOT / "configs" / "mwms.yaml")
    assert repr(planned) == "<Planned mnist-mwms: 2 x ml.p4d.24xlarge, multi_worker_mirrored, 16 replicas>"


def test_html_shows_the_plan_and_masks_secrets(tmp_path: Path) -> None:
    # An own script whose preflight warning quotes a path that holds the spec's secret value.
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(SCRIPT.format(secret=DB_PASSWORD))
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                 "code": {"source_dir": "src", "entry_point": "train.py"},
                                 "hyperparameters": {"epochs": 2}, "environment": {"DB_PASSWORD": DB_PASSWORD}})
    planned = smtrain.plan(spec)
    assert [f.rule for f in planned.findings] == ["local-path"]
    html = planned._repr_html_()
    assert html.startswith("<div>") and "<table>" in html and "ml.g5.xlarge" in html and "train.py" in html
    assert DB_PASSWORD not in html
    assert "/home/me/****/train.csv" in html
    # The bundled entrypoint's maths are shown where the plan has them (an own script does its own).
    bundled = smtrain.plan(ROOT / "configs" / "mwms.yaml")._repr_html_()
    assert "64 per replica, 1024 global" in bundled and "batch" not in html
