"""The preflight scan through validate, plan and submit, as a user runs them: warnings at file:line on
stderr, a `preflight` list in JSON, and --strict's exit 2 with nothing sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_runner import no_result, smtrain
from tests.support.specfiles import write_spec

SCRIPT = """\
import argparse
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--model_dir")
args = parser.parse_args()
strategy = tf.distribute.MirroredStrategy()
LOGS = "/opt/ml/output/data/logs"
"""


def job(tmp_path: Path, script: str = SCRIPT, **changes: object) -> str:
    (tmp_path / "src").mkdir(parents=True)
    (tmp_path / "src" / "train.py").write_text(script)
    spec = {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2},
            "code": {"source_dir": "src", "entry_point": "train.py"}, "hyperparameters": {"epochs": 2}}
    spec.update(changes)
    return str(write_spec(tmp_path, spec))


EXPECTED = [("train.py", 8, "mirrored-multi-node"), ("train.py", 9, "opt-ml-path")]


def test_validate_warns_at_file_and_line(tmp_path: Path) -> None:
    spec = job(tmp_path)
    proc = smtrain("validate", spec)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if ": warning: " in line and line.startswith("train.py:")]
    assert [line.split(": warning: ")[0] for line in lines] == ["train.py:8", "train.py:9"]
    assert lines[0].endswith(")") and "(fix: " in lines[0] and "MultiWorkerMirroredStrategy" in lines[0]
    assert "valid (multi_worker_mirrored on 2 x ml.g5.xlarge)" in proc.stdout


def test_json_lists_the_findings_and_strict_makes_them_exit_2(tmp_path: Path) -> None:
    spec = job(tmp_path)
    for command in ("validate", "plan"):
        proc = smtrain(command, spec, "-o", "json")
        assert proc.returncode == 0, proc.stderr
        found = json.loads(proc.stdout)["preflight"]
        assert [(f["file"], f["line"], f["rule"]) for f in found] == EXPECTED
        assert set(found[0]) == {"file", "line", "rule", "message", "fix", "severity"}
        assert {f["severity"] for f in found} == {"warning"}
        strict = smtrain(command, spec, "-o", "json", "--strict")
        assert strict.returncode == 2 and json.loads(strict.stdout)["preflight"] == found
        assert "2 preflight warnings and --strict" in strict.stderr
    text = smtrain("validate", spec, "--strict")
    assert text.returncode == 2 and "train.py:8: warning: MirroredStrategy()" in text.stderr
    assert "valid" not in text.stdout


def test_strict_submit_sends_nothing(tmp_path: Path) -> None:
    spec = job(tmp_path)
    for extra in (["--dry-run"], ["--dry-run", "-o", "json"], []):
        proc = smtrain("submit", spec, "--strict", *extra, env={"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
                                                                 "AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
        assert proc.returncode == 2, (extra, proc.stderr)
        assert no_result(proc.stdout) and "train.py:8: warning: MirroredStrategy()" in proc.stderr
        assert "nothing was sent" in proc.stderr


def test_a_certain_failure_is_an_error_without_strict(tmp_path: Path) -> None:
    # The spec says batch_size, the script declares --batch-size: parse_args() exits 2 at line 8, for certain.
    script = SCRIPT.replace('parser.add_argument("--model_dir")', 'parser.add_argument("--batch-size", type=int)\n'
                            'parser.add_argument("--model_dir")')
    spec = job(tmp_path, script, hyperparameters={"epochs": 2, "batch_size": 64})
    text = smtrain("validate", spec)
    assert text.returncode == 2 and "valid" not in text.stdout
    assert ("train.py:8: error: parse_args() ends the script on arguments its parser does not declare: "
            "--batch_size (did you mean --batch-size?)") in text.stderr
    assert "1 preflight error found; nothing was sent." in text.stderr
    plan = smtrain("plan", spec)
    assert plan.returncode == 2 and "1 preflight error: the job would fail at that line; nothing was sent." in plan.stderr
    out = smtrain("validate", spec, "-o", "json")
    data = json.loads(out.stdout)
    assert out.returncode == 2 and data["valid"] is False
    assert [(f["line"], f["rule"], f["severity"]) for f in data["preflight"]] == [
        (8, "undeclared-hyperparameters", "error"), (9, "mirrored-multi-node", "warning"),
        (10, "opt-ml-path", "warning")]
    dry = smtrain("submit", spec, "--dry-run", "-o", "json")
    assert dry.returncode == 2 and no_result(dry.stdout) and "nothing was sent" in dry.stderr
    assert "train.py:8: error: " in dry.stderr


def test_a_certain_failure_stops_a_tuning_job_too(tmp_path: Path) -> None:
    # Every trial would exit at the same line: tune sends nothing, as submit does (dry run and real alike).
    script = SCRIPT.replace('parser.add_argument("--model_dir")', 'parser.add_argument("--batch-size", type=int)\n'
                            'parser.add_argument("--model_dir")')
    spec = job(tmp_path, script, hyperparameters={"epochs": 2, "batch_size": 64},
               tuning={"objective": "validation:accuracy", "max_jobs": 2,
                       "ranges": {"hyperparameters.epochs": {"min": 1, "max": 3}}})
    for extra in (["--dry-run"], ["--dry-run", "-o", "json"], ["-o", "json"]):
        tune = smtrain("tune", spec, *extra)
        assert tune.returncode == 2 and no_result(tune.stdout), extra
        assert "train.py:8: error: " in tune.stderr and "nothing was sent" in tune.stderr


def test_a_clean_script_passes_strict(tmp_path: Path) -> None:
    clean = SCRIPT.replace("tf.distribute.MirroredStrategy()", "tf.distribute.MultiWorkerMirroredStrategy()")
    clean = clean.replace('LOGS = "/opt/ml/output/data/logs"', 'LOGS = os.environ["SM_OUTPUT_DATA_DIR"]')
    clean = clean.replace("import argparse", "import argparse, os")
    spec = job(tmp_path, clean)
    proc = smtrain("validate", spec, "--strict", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["preflight"] == []


def test_the_bundled_entrypoint_has_an_empty_list(tmp_path: Path) -> None:
    proc = smtrain("plan", str(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}})), "-o", "json",
                   "--strict")
    assert proc.returncode == 0 and json.loads(proc.stdout)["preflight"] == []


@pytest.mark.slow  # renders the request through the SageMaker SDK
def test_the_dry_run_carries_the_findings(tmp_path: Path) -> None:
    proc = smtrain("submit", job(tmp_path), "--dry-run", "-o", "json", "--job-name", "pf-1")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [(f["file"], f["line"], f["rule"]) for f in out["preflight"]] == EXPECTED
    assert "warning: " not in proc.stderr  # in JSON mode they travel in the document
    text = smtrain("submit", job(tmp_path / "t"), "--dry-run", "--job-name", "pf-2")
    assert text.returncode == 0 and "train.py:8: warning: " in text.stderr and "Dry run" in text.stdout


def test_plan_shows_what_the_wrap_gives_the_scripts_own_strategy(tmp_path: Path) -> None:
    script = SCRIPT.replace('LOGS = "/opt/ml/output/data/logs"\n', "")
    spec = job(tmp_path, script, compute={"instance_type": "ml.g5.12xlarge", "nodes": 2},
               code={"source_dir": "src", "entry_point": "train.py", "wrap": True})
    text = smtrain("plan", spec)
    assert text.returncode == 0, text.stderr
    assert ("  your strategy train.py:8 builds MirroredStrategy(): under the wrap it is the job's "
            "multi_worker_mirrored strategy (2 hosts x 4 replicas)") in text.stdout.splitlines()
    assert "warning: MirroredStrategy()" not in text.stderr  # under the wrap it spans the hosts
    data = json.loads(smtrain("plan", spec, "-o", "json").stdout)
    assert data["program"]["own_strategies"] == [
        {"file": "train.py", "line": 8, "builds": "MirroredStrategy()",
         "becomes": "the job's multi_worker_mirrored strategy (2 hosts x 4 replicas)"}]
    # One with devices of its own is refused before anything is paid.
    (tmp_path / "src" / "train.py").write_text(script.replace("MirroredStrategy()", 'MirroredStrategy(["/gpu:0"])'))
    refused = smtrain("validate", spec)
    assert refused.returncode == 2 and "train.py:8: error: MirroredStrategy(...) given devices" in refused.stderr


CHANNELS = """\
import os

import numpy as np

train = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "part-0.npz"))
data_dir = os.environ.get("SM_CHANNEL_DATA", "data")
test_dir = os.getenv("SM_CHANNEL_TEST")
"""


def channels_job(tmp_path: Path, script: str, inputs: dict[str, str]) -> str:
    """A one-GPU job of `script` whose inputs are exactly `inputs` (none: {})."""
    import yaml

    spec = Path(job(tmp_path, script, compute={"instance_type": "ml.g5.xlarge"}))
    data = yaml.safe_load(spec.read_text())
    data["inputs"] = inputs
    if not inputs:
        del data["inputs"]
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(spec)


def test_channels_the_script_reads_are_checked_against_the_specs_inputs(tmp_path: Path) -> None:
    (tmp_path / "data" / "train").mkdir(parents=True)
    spec = channels_job(tmp_path, CHANNELS, {"train": "data/train"})
    proc = smtrain("validate", spec, "-o", "json")
    found = {f["line"]: (f["rule"], f["severity"]) for f in json.loads(proc.stdout)["preflight"]}
    # train is given; data (read with a fallback) and test (None) are not: warnings, the job may still run.
    assert found == {6: ("channel-not-given", "warning"), 7: ("channel-not-given", "warning")}, proc.stdout
    assert proc.returncode == 0
    text = smtrain("validate", spec).stderr
    assert ("train.py:6: warning: os.environ.get(\"SM_CHANNEL_DATA\", ...) reads channel 'data', which the spec's "
            "inputs do not give (given: train)") in text
    assert "add it to the spec: inputs: {data: s3://bucket/prefix}" in text

    # Without the train channel, os.environ["SM_CHANNEL_TRAIN"] fails for certain: an error, exit 2.
    other = tmp_path / "other"
    (other / "data" / "validation").mkdir(parents=True)
    spec = channels_job(other, CHANNELS, {"validation": "data/validation"})
    refused = smtrain("validate", spec)
    assert refused.returncode == 2
    assert ("train.py:5: error: os.environ[\"SM_CHANNEL_TRAIN\"] reads channel 'train', which the spec's inputs "
            "do not give (given: validation): the job fails here") in refused.stderr


def test_a_missing_local_input_and_data_shipped_instead_of_inputs_are_said(tmp_path: Path) -> None:
    spec = channels_job(tmp_path, CHANNELS.replace('["SM_CHANNEL_TRAIN"]', '.get("SM_CHANNEL_TRAIN", "data")'),
                        {"train": "no/such/dir"})
    proc = smtrain("validate", spec)
    assert proc.returncode == 0, proc.stderr
    assert "inputs.train: no/such/dir does not exist on this machine" in proc.stderr
    assert "the local run fails unless it is made first" in proc.stderr

    shipped = tmp_path / "shipped"
    spec = channels_job(shipped, CHANNELS.replace('["SM_CHANNEL_TRAIN"]', '.get("SM_CHANNEL_TRAIN", "data")'), {})
    (shipped / "src" / "data").mkdir()
    for name in ("train.npz", "labels.csv"):
        (shipped / "src" / "data" / name).write_bytes(b"0")
    warned = smtrain("validate", spec)
    assert ("the spec gives no inputs, and source_dir ships data files with the code (data/labels.csv, "
            "data/train.npz)") in warned.stderr
    with_inputs = shipped / "with-inputs"
    (with_inputs / "d").mkdir(parents=True)
    spec = channels_job(with_inputs, CHANNELS, {"train": "d"})
    (with_inputs / "src" / "x.npz").write_bytes(b"0")
    assert "ships data files" not in smtrain("validate", spec).stderr  # inputs given: the data is the job's choice
