"""README's First hour, line by line, as a new user runs it: in a fresh copy of the repository, a fresh
virtual environment, `pip install '.[local]'` (pip builds the wheel and installs it with its extras),
then every command of the block in one shell, which stops at the first line that fails.

Only the block's own text is run (read from README.md at test time), so the test follows the README.
It downloads nothing that `make install` did not already fetch into pip's cache; it takes a few
minutes (TensorFlow's wheel is large), so it runs once, marked slow.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.docs import section

pytestmark = pytest.mark.slow


def first_hour_lines() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", section("First hour"), re.S)
    assert block is not None, "the docs' First hour has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _copy_of_the_repository(target: Path) -> None:
    """What a clone holds: the tracked files (and new ones not ignored), as they are in this checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name, follow_symlinks=False)
        elif source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).symlink_to(os.readlink(source))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to list the repository's files (CI installs it)")
def test_the_first_hour_runs_line_by_line_from_a_fresh_venv(tmp_path: Path) -> None:
    lines = first_hour_lines()
    assert any("pip install '.[local]'" in line for line in lines)
    assert any("smtrain submit" in line and "--local" in line for line in lines)
    clone = tmp_path / "smtrain"
    _copy_of_the_repository(clone)
    script = "set -euo pipefail\n" + "".join(f"echo '+++ {i}'\n{line}\n" for i, line in enumerate(lines))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "SMTRAIN_", "PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE"))}
    env.update({"HOME": str(tmp_path / "home"), "SMTRAIN_HOME": str(tmp_path / "smtrain-home"),
                # pip's cache stays the user's (the wheels `make install` fetched), the rest is new
                "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
                # this project's own .venv is not the user's: off the PATH
                "PATH": os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                                        if not p.startswith(str(ROOT))),
                "AWS_EC2_METADATA_DISABLED": "true"})
    (tmp_path / "home").mkdir()
    proc = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, timeout=1500)
    reached = re.findall(r"^\+\+\+ (\d+)$", proc.stdout, re.M)
    failed_at = lines[int(reached[-1])] if reached else "(before the first line)"
    assert proc.returncode == 0, f"README's First hour stops at: {failed_at}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert len(reached) == len(lines)
    # The local run completed, and `smtrain list --local` lists it.
    assert "Completed" in proc.stdout and "local" in proc.stdout.lower()
