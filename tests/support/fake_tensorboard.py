"""A stand-in `tensorboard` program for tests of `smtrain tensorboard`, which must not install TensorBoard.

It stands in for the real program's command line only: put on PATH, it records its arguments (as JSON,
in the file FAKE_TENSORBOARD_RECORD names) and exits with FAKE_TENSORBOARD_EXIT (default 0). A real
TensorBoard installed beside this interpreter, or importable by it, would be found first (and would
serve until stopped): tests that rely on the stand-in or on its absence skip there (`no_tensorboard_here`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PROGRAM = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["FAKE_TENSORBOARD_RECORD"], "w") as f:
    json.dump(sys.argv[1:], f)
sys.exit(int(os.environ.get("FAKE_TENSORBOARD_EXIT", "0")))
"""

installed = (Path(sys.executable).parent / "tensorboard").exists() or importlib.util.find_spec("tensorboard") is not None
no_tensorboard_here = pytest.mark.skipif(installed, reason="TensorBoard is installed in this environment")


def bin_dir(directory: Path, *, fake: bool) -> Path:
    """`directory`/bin for PATH: holding the stand-in, or nothing (TensorBoard nowhere on PATH)."""
    path = directory / "bin"
    path.mkdir(exist_ok=True)
    if fake:
        program = path / "tensorboard"
        program.write_text(PROGRAM)
        program.chmod(0o755)
    return path
