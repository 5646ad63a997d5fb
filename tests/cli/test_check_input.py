"""Bad input to `smtrain check SPEC` and `smtrain submit SPEC --check`: exit 2 with a clear message before
any training starts.

Each command runs as a user runs it (a separate process) with TMPDIR in the test's own directory. A check
makes its work directory (smtrain-check-*) there before its first run and removes it after; one refused
before running must leave none, and must not have printed the progress line a run starts with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT
from tests.support.cli_runner import smtrain
from tests.support.specfiles import write_spec

PROGRESS = "check: one device standing for"  # the line printed as the first run starts


@pytest.fixture
def temp(tmp_path: Path) -> Path:
    place = tmp_path / "tmp"
    place.mkdir()
    return place


def _refused(temp: Path, *args: str, cwd: Path | None = None) -> str:
    """Run the command; it must exit 2 with one error, no traceback, nothing run: its stderr."""
    done = smtrain(*args, env={"TMPDIR": str(temp)}, cwd=cwd)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert PROGRESS not in done.stderr
    assert [p.name for p in temp.iterdir() if p.name.startswith("smtrain-check-")] == []
    return done.stderr


def _spec(tmp_path: Path, changes: dict[str, Any] | None = None) -> Path:
    """Two single-GPU hosts (multi_worker_mirrored); inputs.train on S3 (the base spec's)."""
    return write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2}, **(changes or {})})


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    place = tmp_path / "sample"
    place.mkdir()
    (place / "part-0.csv").write_text("1,2,3\n", encoding="utf-8")
    return place


@pytest.mark.parametrize("command", [["check"], ["submit", "--check"]])
def test_an_s3_channel_needs_a_local_sample(tmp_path: Path, temp: Path, command: list[str]) -> None:
    stderr = _refused(temp, command[0], str(_spec(tmp_path)), *command[1:])
    assert "job.yaml:7:10: inputs.train: s3://my-bucket/train: the check trains here" in stderr
    assert "--data train=" in stderr


def test_every_s3_channel_is_named_at_once_at_its_line(tmp_path: Path, temp: Path) -> None:
    spec = _spec(tmp_path, {"inputs": {"train": "s3://my-bucket/train", "validation": "s3://my-bucket/val"}})
    stderr = _refused(temp, "check", str(spec))
    assert "inputs.train: s3://my-bucket/train" in stderr and "inputs.validation: s3://my-bucket/val" in stderr
    assert "2 problems found" in stderr


def test_every_s3_channel_needs_one(tmp_path: Path, temp: Path, sample: Path) -> None:
    spec = _spec(tmp_path, {"inputs": {"train": "s3://my-bucket/train", "validation": "s3://my-bucket/val"}})
    stderr = _refused(temp, "check", str(spec), "--data", f"train={sample}")
    assert "inputs.validation: s3://my-bucket/val" in stderr and "--data validation=" in stderr
    assert "inputs.train" not in stderr


@pytest.mark.parametrize("command", [["check"], ["submit", "--check"]])
def test_data_for_a_channel_the_spec_lacks(tmp_path: Path, temp: Path, sample: Path, command: list[str]) -> None:
    stderr = _refused(temp, command[0], str(_spec(tmp_path)), *command[1:], "--data", f"trian={sample}")
    assert "--data trian: the spec has no input channel 'trian' (it has: train)" in stderr


def test_data_with_a_missing_path(tmp_path: Path, temp: Path) -> None:
    missing = tmp_path / "no-such-sample"
    stderr = _refused(temp, "check", str(_spec(tmp_path)), "--data", f"train={missing}")
    assert f"--data train={missing}: no such file or directory" in stderr


@pytest.mark.parametrize("item", ["train", "=./sample", "train="])
def test_data_that_is_not_name_equals_path(tmp_path: Path, temp: Path, item: str) -> None:
    stderr = _refused(temp, "check", str(_spec(tmp_path)), "--data", item)
    assert f"--data {item!r}: give NAME=PATH" in stderr


@pytest.mark.parametrize("config, says", [
    ("parameter-server.yaml", "its parameter-server workers train on steps the chief only schedules"),
    ("horovod.yaml", "distribution horovod is not checked yet"),
    ("smddp.yaml", "distribution smddp is not checked yet"),
])
def test_strategies_that_cannot_be_checked(temp: Path, config: str, says: str) -> None:
    stderr = _refused(temp, "check", str(ROOT / "configs" / config))
    assert "cannot check this job: " + says in stderr


def _own_script(tmp_path: Path, text: str, **others: str) -> Path:
    """code/train.py as the entry point, beside `others` (file name: text)."""
    code = tmp_path / "code"
    code.mkdir()
    for name, content in {"train.py": text, **others}.items():
        (code / name).parent.mkdir(exist_ok=True)
        (code / name).write_text(content, encoding="utf-8")
    # inputs.train stays on S3: a script wrongly let through stops at the sample it lacks, never trains here
    return _spec(tmp_path, {"code": {"source_dir": str(code), "entry_point": "train.py"}})


def test_an_own_loop_without_smtrain_tf_cannot_be_checked(tmp_path: Path, temp: Path) -> None:
    spec = _own_script(tmp_path, "import tensorflow as tf\n\nmodel = tf.keras.Sequential()\n"
                                 "# smtrain_tf is named here only in a comment\n")
    stderr = _refused(temp, "check", str(spec))
    assert "cannot check this job: train.py trains with its own loop" in stderr
    # What makes it checkable: it calls no model.fit, so code.wrap would not help.
    assert "train with smtrain_tf.fit (no model.fit was found in it" in stderr and "set code.wrap" not in stderr


def test_an_own_script_with_fit_is_told_code_wrap_or_smtrain_tf(tmp_path: Path, temp: Path) -> None:
    spec = _own_script(tmp_path, "import tensorflow as tf\n\nmodel = tf.keras.Sequential()\nmodel.fit(None)\n")
    stderr = _refused(temp, "check", str(spec))
    assert "make it checkable: set code.wrap: true" in stderr and "or train with smtrain_tf.fit" in stderr


def test_a_wrapped_script_without_fit_cannot_be_checked(tmp_path: Path, temp: Path) -> None:
    spec = _own_script(tmp_path, "import tensorflow as tf\n\nfor step in range(3):\n    pass\n")
    spec.write_text(spec.read_text(encoding="utf-8").replace("entry_point: train.py",
                                                             "entry_point: train.py\n  wrap: true"), encoding="utf-8")
    stderr = _refused(temp, "check", str(spec))
    assert "cannot check this job: no model.fit was found in train.py" in stderr


def test_a_helper_beside_the_script_does_not_make_it_checkable(tmp_path: Path, temp: Path) -> None:
    """Only what the entry point imports counts, not every file of the bundle (smtrain's own entry files
    import smtrain_tf too)."""
    spec = _own_script(tmp_path, "import tensorflow as tf\n", **{"ported.py": "import smtrain_tf\n"})
    stderr = _refused(temp, "check", str(spec))
    assert "cannot check this job: train.py trains with its own loop" in stderr


def test_an_own_script_importing_smtrain_tf_through_its_module_is_not_refused(tmp_path: Path, temp: Path) -> None:
    spec = _own_script(tmp_path, "from helpers import training\n\ntraining.run()\n",
                       **{"helpers/__init__.py": "", "helpers/training.py": "from smtrain_tf import fit\n"})
    stderr = _refused(temp, "check", str(spec))
    assert "cannot check" not in stderr and "inputs.train: s3://my-bucket/train" in stderr


def test_an_own_script_with_smtrain_tf_is_not_refused_for_its_loop(tmp_path: Path, temp: Path) -> None:
    spec = _own_script(tmp_path, "import smtrain_tf\n\nsmtrain_tf.fit(None)\n")
    stderr = _refused(temp, "check", str(spec))
    assert "cannot check" not in stderr and "inputs.train: s3://my-bucket/train" in stderr


@pytest.mark.parametrize("extra", [["--force"], ["--data", "train=./sample"], ["--random-layers", "off"],
                                   ["--check-steps", "5"]])
def test_check_options_without_check_are_a_usage_error(tmp_path: Path, temp: Path, extra: list[str]) -> None:
    stderr = _refused(temp, "submit", str(_spec(tmp_path)), *extra)
    assert "--force, --data, --check-steps and --random-layers go with --check" in stderr
    assert "Usage: smtrain submit" in stderr


def test_check_steps_must_be_at_least_one(tmp_path: Path, temp: Path) -> None:
    stderr = _refused(temp, "check", str(_spec(tmp_path)), "--check-steps", "0")
    assert "--check-steps" in stderr


def test_a_plan_of_one_replica_is_equivalent_without_running(tmp_path: Path, temp: Path) -> None:
    # One GPU on one host trains as one device does: no run, no data needed (its channel is on S3).
    spec = _spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 1}})
    done = smtrain("check", str(spec), "-o", "json", env={"TMPDIR": str(temp)})
    assert done.returncode == 0, done.stderr
    assert '"equivalent": true' in done.stdout and "nothing to compare, so nothing ran" in done.stdout
    assert PROGRESS not in done.stderr and list(temp.iterdir()) == []


def test_one_host_of_several_gpus_under_multi_worker_mirrored_cannot_be_run_here(tmp_path: Path, temp: Path) -> None:
    spec = _spec(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 1},
                            "distribution": {"strategy": "multi_worker_mirrored"}})
    stderr = _refused(temp, "check", str(spec))
    assert "cannot check this job: its plan trains 4 replicas on one host under multi_worker_mirrored" in stderr
    assert "distribution.strategy: mirrored" in stderr


def test_a_wrong_data_is_refused_even_when_nothing_would_run(tmp_path: Path, temp: Path) -> None:
    spec = _spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 1}})
    stderr = _refused(temp, "check", str(spec), "--data", "nosuch=/nonexistent")
    assert "--data nosuch" in stderr
