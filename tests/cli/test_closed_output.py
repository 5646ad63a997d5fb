"""A reader that goes away (`smtrain logs JOB | head -1`) ends any command quietly, exit 141.

Each command runs as a real process whose stdout is a pipe with no reader left: its read end is
closed before the process starts, so the first write fails for certain (no race with a reader).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from smtrain import exit_codes
from smtrain.local.records import JobStore
from smtrain.local.supervise import format_log_line, utc_now
from tests.support import ROOT
from tests.support.specfiles import write_spec

JOB = "closed-pipe-1"


def run_with_stdout_unread(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    full_env.update(env)
    try:
        return subprocess.run([sys.executable, "-m", "smtrain", *args], cwd=ROOT, env=full_env, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A local job record with a few log lines, so that logs, list and status have something to print."""
    home = tmp_path / "home"
    store = JobStore(home)
    job_dir = store.create(JOB)
    store.write(JOB, {"name": JOB, "status": "Completed", "secondary_status": "Completed",
                      "created": "2024-01-01T00:00:00Z", "log_dir": str(job_dir / "logs")})
    store.log_dir(JOB).mkdir()
    lines = "".join(format_log_line(utc_now(), f"line {i}") for i in range(2000))
    (store.log_dir(JOB) / "algo-1.log").write_text(lines, encoding="utf-8")
    return home


@pytest.mark.parametrize("args", [
    ["logs", JOB],
    ["logs", JOB, "--output", "json"],
    ["list", "--local"],
    ["status", JOB],
    ["instances"],
    ["schema"],
    ["--help"],
    pytest.param(["submit", "{spec}", "--dry-run"], marks=pytest.mark.slow),
], ids=lambda args: " ".join(args))
def test_a_closed_stdout_ends_the_command_quietly_with_141(args: list[str], home: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    proc = run_with_stdout_unread([a.format(spec=spec) for a in args], {"SMTRAIN_HOME": str(home)})
    assert proc.returncode == exit_codes.OUTPUT_CLOSED == 141, proc.stderr
    assert proc.stderr == ""  # no "internal error", no "Exception ignored ... BrokenPipeError" at exit


def test_a_closed_stdout_with_debug_is_quiet_too(home: Path) -> None:
    proc = run_with_stdout_unread(["--debug", "logs", JOB], {"SMTRAIN_HOME": str(home)})
    assert (proc.returncode, proc.stderr) == (141, "")
