"""`smtrain init train.py`, as a user runs it: a starting spec that validates, never a file replaced unasked."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import yaml

from tests.support.cli_runner import smtrain

SCRIPT = textwrap.dedent("""\
    import argparse
    import os

    import tensorflow as tf

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--model_dir")
    args = parser.parse_args()
    x = os.environ["SM_CHANNEL_TRAIN"]
    """)


def script_in(tmp_path: Path, folder: str = "digits") -> Path:
    script = tmp_path / folder / "train.py"
    script.parent.mkdir(parents=True)
    script.write_text(SCRIPT)
    return script


def test_init_writes_a_spec_beside_the_script_that_validate_and_plan_accept(tmp_path: Path) -> None:
    script_in(tmp_path)
    proc = smtrain("init", "digits/train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    spec = tmp_path / "digits" / "job.yaml"
    data = yaml.safe_load(spec.read_text())
    assert data["hyperparameters"] == {"epochs": 3, "batch-size": 64}
    assert data["code"] == {"source_dir": ".", "entry_point": "train.py", "wrap": True}
    assert proc.stdout.splitlines()[:2] == ["wrote digits/job.yaml for digits/train.py",
                                           "digits/job.yaml: valid (none on 1 x ml.g5.xlarge)"]
    for step in ("smtrain plan digits/job.yaml", "smtrain submit digits/job.yaml --dry-run",
                 "smtrain submit digits/job.yaml --local"):
        assert f"  {step}" in proc.stdout
    assert proc.stderr == ""  # nothing for the preflight scan to say about it
    again = smtrain("validate", "digits/job.yaml", "--strict", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    plan = smtrain("plan", "digits/job.yaml", "-o", "json", cwd=tmp_path)
    assert plan.returncode == 0 and json.loads(plan.stdout)["preflight"] == []


def test_init_never_replaces_a_file_without_force(tmp_path: Path) -> None:
    script = script_in(tmp_path)
    spec = script.parent / "job.yaml"
    spec.write_text("mine\n")
    proc = smtrain("init", str(script))
    assert proc.returncode == 2 and "exists: pass --force" in proc.stderr
    assert spec.read_text() == "mine\n"
    forced = smtrain("init", str(script), "--force")
    assert forced.returncode == 0, forced.stderr
    assert yaml.safe_load(spec.read_text())["name"] == "digits"


def test_init_writes_where_asked_and_speaks_json(tmp_path: Path) -> None:
    script_in(tmp_path, "project/src")
    proc = smtrain("init", "project/src/train.py", "specs/train.yaml", "-o", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["spec_file"] == "specs/train.yaml" and out["valid"] is True and out["preflight"] == []
    assert out["hyperparameters"] == {"epochs": 3, "batch-size": 64}
    assert out["next"][0] == "smtrain plan specs/train.yaml"
    data = yaml.safe_load((tmp_path / "specs" / "train.yaml").read_text())
    assert data["code"]["source_dir"] == "../project/src" and data["name"] == "project"


def test_init_shows_what_the_preflight_scan_finds(tmp_path: Path) -> None:
    script = script_in(tmp_path)
    script.write_text(SCRIPT + 'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n')
    proc = smtrain("init", str(script))
    assert proc.returncode == 0, proc.stderr
    assert "train.py:12: warning: the script sets CUDA_VISIBLE_DEVICES" in proc.stderr


def test_init_refuses_what_is_not_a_python_script(tmp_path: Path) -> None:
    missing = smtrain("init", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    notebook = tmp_path / "train.ipynb"
    notebook.write_text("{}")
    proc = smtrain("init", str(notebook))
    assert proc.returncode == 2 and "not a Python script (.py)" in proc.stderr
    assert not (tmp_path / "job.yaml").exists()
    folder = smtrain("init", str(tmp_path))
    assert folder.returncode == 2 and "not a file" in folder.stderr
    assert "Traceback" not in missing.stderr + proc.stderr + folder.stderr
