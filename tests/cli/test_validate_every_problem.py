"""`validate` reports every problem it can find in one run (README): the spec's fields, the code (its files,
the preflight scan) and the plan (region, strategy), instead of one stage per run."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.cli_runner import smtrain

SCRIPT = """\
import argparse
import tensorflow as tf
parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int)
parser.add_argument("--model_dir")
args = parser.parse_args()
"""

# One problem of each kind: a field name misspelt (spec), a requirements file that is not there (code),
# a hyperparameter the script's parse_args() refuses (preflight), no region and a strategy for one node
# on two (plan).
SPEC = """\
name: every-problem
role: arn:aws:iam::123456789012:role/R
output: s3://my-bucket/x
compute: {instance_type: ml.g5.xlarge, nodes: 2, gpus_per_nod: 2}
distribution: {strategy: mirrored}
code: {source_dir: src, entry_point: train.py, requirements: reqs.txt}
hyperparameters: {batch_size: 64}
"""


def _job(tmp_path: Path, spec: str = SPEC) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(SCRIPT)
    (tmp_path / "job.yaml").write_text(spec)
    return tmp_path / "job.yaml"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_REGION", "AWS_DEFAULT_REGION")}
    env["AWS_CONFIG_FILE"] = os.devnull
    return env


def test_one_run_reports_a_problem_of_each_kind(tmp_path: Path) -> None:
    spec = _job(tmp_path)
    proc = smtrain("validate", str(spec), env=_env())
    assert proc.returncode == 2 and proc.stdout == ""
    errors = [line.split(": ")[2] for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors == ["compute.gpus_per_nod", "code.requirements", "region", "distribution.strategy"]
    assert "did you mean 'gpus_per_node'" in proc.stderr
    assert "train.py:6: error: parse_args() ends the script" in proc.stderr and "(did you mean --batch-size?)" in \
        proc.stderr
    assert proc.stderr.count("code.requirements") == 1  # the spec's problem, not the bundle's again
    assert "4 problems and 1 preflight error found; nothing was sent." in proc.stderr
    data = json.loads(smtrain("validate", str(spec), "-o", "json", env=_env()).stdout)
    # The bundle's own "requirements file not found" follows from the spec's: held back, and said so.
    assert data["valid"] is False and data["skipped"] == [
        "later checks of code are left for the next run: they may only follow from the problems above"]
    assert [p["field"] for p in data["problems"]] == errors
    assert [(f["line"], f["rule"], f["severity"]) for f in data["preflight"]] == [
        (6, "undeclared-hyperparameters", "error")]


def test_a_refused_value_skips_the_checks_that_would_read_a_stand_in(tmp_path: Path) -> None:
    # max_run is refused: a plan of the default 1d would judge a job the user did not write. The other
    # fields' problems are still all there; the note says what did not run.
    spec = _job(tmp_path, SPEC.replace("nodes: 2,", "nodes: 2, max_run: 99y,"))
    proc = smtrain("validate", str(spec), env=_env())
    assert proc.returncode == 2
    errors = [line.split(": ")[2] for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors == ["compute.max_run", "compute.gpus_per_nod", "code.requirements"]
    assert ("note: the plan's and the code's checks did not run: they would judge a value you did not write in "
            "place of compute.max_run") in proc.stderr
    assert "3 problems found; nothing was sent." in proc.stderr
    data = json.loads(smtrain("validate", str(spec), "-o", "json", env=_env()).stdout)
    assert len(data["skipped"]) == 1 and data["preflight"] == []
