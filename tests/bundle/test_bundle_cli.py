"""The bundle's refusals and warnings through every command that reads a spec, as a user runs them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.bundle.fake_secrets import pem
from tests.support.cli_runner import no_result, smtrain
from tests.support.moto_server import MotoServer, live_spec
from tests.support.specfiles import write_spec

LARGE_FILE = 10 * 10**6  # the threshold the warning names (smtrain.bundle.sizes)
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def job(tmp_path: Path, files: dict[str, str], code: dict[str, object] | None = None) -> tuple[Path, str]:
    """A spec whose code.source_dir holds `files`, and the file:line:column of its source_dir value."""
    src = tmp_path / "src"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    src.mkdir(exist_ok=True)
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                 "code": {"source_dir": "src", **(code or {})}})
    lines = spec.read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip() == "source_dir: src")
    return spec, f"{spec}:{row + 1}:{lines[row].index('src') + 1}"


def assert_refused(proc, where: str, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert f"error: {where}: code.source_dir: " in proc.stderr
    for needle in needles:
        assert needle in proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


# --------------------------------------------------------------------------- refusals


def test_validate_and_plan_refuse_secrets_as_the_dry_run_does(tmp_path: Path) -> None:
    spec, where = job(tmp_path, {"train.py": "", ".env": "DB_PASSWORD=x\n", "deploy/key.txt": pem("OPENSSH")})
    for args in (("validate",), ("plan",), ("plan", "-o", "json"), ("submit", "--dry-run")):
        proc = smtrain(*args, str(spec))
        assert_refused(proc, where, "  .env\n", "  deploy/key.txt (holds a private key)\n", "code.allow_secrets")
        assert no_result(proc.stdout), args

    data = json.loads(smtrain("validate", str(spec), "-o", "json").stdout)
    [problem] = data["problems"]
    assert data["valid"] is False
    assert (problem["file"], problem["field"]) == (str(spec), "code.source_dir")
    assert f"{spec}:{problem['line']}:{problem['column']}" == where

    allowed, _ = job(tmp_path / "allowed", {"train.py": "", ".env": "A=1\n", "deploy/key.txt": pem("OPENSSH")},
                     {"allow_secrets": ["/.env", "deploy/key.txt"]})
    assert smtrain("validate", str(allowed)).returncode == 0


def test_hopeless_size_is_refused_by_validate_and_before_compressing(tmp_path: Path) -> None:
    spec, where = job(tmp_path, {"train.py": ""}, {"max_bundle_size": "1MB"})
    for name in ("disk.img", "disk2.img"):  # each within the bound on one file, together hopeless
        with open(tmp_path / "src" / name, "wb") as fh:
            fh.truncate(10**9)  # sparse
    for args in (("validate",), ("submit", "--dry-run", "-o", "json")):
        proc = smtrain(*args, str(spec))
        assert_refused(proc, where, "at least 1.9 MB", "over the limit of 1.0 MB", "disk.img  1.0 GB")
        assert no_result(proc.stdout)


# --------------------------------------------------------------------------- warnings


def _special_file_warning(stderr: str, where: str) -> None:
    assert f"warning: {where}: code.source_dir: a special file" in stderr
    assert "  run/pipe  (FIFO)" in stderr


@needs_fifo
def test_special_files_are_named_by_validate_and_plan(tmp_path: Path) -> None:
    spec, where = job(tmp_path, {"train.py": "", "run/keep": ""})
    os.mkfifo(tmp_path / "src" / "run" / "pipe")

    proc = smtrain("validate", str(spec))
    assert proc.returncode == 0, proc.stderr
    _special_file_warning(proc.stderr, where)

    [warning] = json.loads(smtrain("validate", str(spec), "-o", "json").stdout)["warnings"]
    assert warning["field"] == "code.source_dir" and "run/pipe  (FIFO)" in warning["message"]

    proc = smtrain("plan", str(spec))
    assert proc.returncode == 0, proc.stderr
    assert "Warnings:" in proc.stdout and "run/pipe  (FIFO)" in proc.stdout

    data = json.loads(smtrain("plan", str(spec), "-o", "json").stdout)
    assert any("run/pipe  (FIFO)" in w for w in data["warnings"])


@needs_fifo
def test_special_files_are_named_by_the_dry_run_and_a_local_run(tmp_path: Path) -> None:
    spec, where = job(tmp_path, {"train.py": "", "run/keep": ""})
    os.mkfifo(tmp_path / "src" / "run" / "pipe")

    proc = smtrain("submit", str(spec), "--dry-run", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    _special_file_warning(proc.stderr, where)
    assert "run/pipe" not in {f["path"] for f in json.loads(proc.stdout)["upload"]["files"]}

    # A local run warns before it starts; a job of that name already there stops it right after the
    # bundle is built, with nothing run.
    home = tmp_path / "home"
    (home / "local-jobs" / "taken").mkdir(parents=True)
    proc = smtrain("submit", str(spec), "--local", "--job-name", "taken", env={"SMTRAIN_HOME": str(home)})
    assert proc.returncode == 2 and "already exists" in proc.stderr
    _special_file_warning(proc.stderr, where)


@needs_fifo
@pytest.mark.slow  # through the SageMaker SDK
def test_special_files_are_named_by_a_real_submit(aws: MotoServer, tmp_path: Path) -> None:
    (tmp_path / "src" / "run").mkdir(parents=True)
    (tmp_path / "src" / "train.py").write_text("")
    os.mkfifo(tmp_path / "src" / "run" / "pipe")
    spec = live_spec(tmp_path, {"code": {"source_dir": "src"}})
    proc = smtrain("submit", str(spec), "--job-name", "fifo-job", "-o", "json", env=aws.env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "code.source_dir: a special file" in proc.stderr and "  run/pipe  (FIFO)" in proc.stderr
    assert json.loads(proc.stdout)["job_name"] == "fifo-job"


def test_large_file_warning_gives_the_ignore_line_that_works(tmp_path: Path) -> None:
    spec, where = job(tmp_path, {"train.py": ""})
    (tmp_path / "src" / "data").mkdir()
    with open(tmp_path / "src" / "data" / "frames.npy", "wb") as fh:
        fh.truncate(LARGE_FILE + 1)  # sparse: compresses to almost nothing

    proc = smtrain("submit", str(spec), "--dry-run", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {where}: code.source_dir: a file over 10 MB" in proc.stderr
    assert "  data/frames.npy  10.0 MB (10000001 bytes)" in proc.stderr
    assert "\n  /data/frames.npy\n" in proc.stderr + "\n"
    assert "data/frames.npy" in {f["path"] for f in json.loads(proc.stdout)["upload"]["files"]}

    (tmp_path / "src" / ".smtrainignore").write_text("/data/frames.npy\n")
    proc = smtrain("submit", str(spec), "--dry-run", "-o", "json")
    assert proc.returncode == 0 and "warning" not in proc.stderr
    assert "data/frames.npy" not in {f["path"] for f in json.loads(proc.stdout)["upload"]["files"]}
