"""TensorBoard, where this machine has it: the command line that starts it on a logdir, and running it.

TensorBoard is an optional extra (`pip install 'smtrain[tensorboard]'`); smtrain never imports it. It is
found, in this order: the `tensorboard` program installed beside smtrain's own interpreter (the same
virtual environment, pipx's included), a `tensorboard` module that interpreter can import, a
`tensorboard` program on PATH.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from smtrain.errors import Terminated

INSTALL_HINT = "pip install 'smtrain[tensorboard]'"
_SHUTDOWN_SECONDS = 10.0  # how long TensorBoard gets to end after Ctrl-C before it is killed


def tensorboard_command(logdir: Path) -> list[str] | None:
    """`tensorboard --logdir LOGDIR` as this machine can run it; None when TensorBoard is not installed."""
    # Not resolved: a virtual environment's python is a link to the base interpreter, its scripts sit beside the link.
    beside = Path(sys.executable).parent / ("tensorboard.exe" if os.name == "nt" else "tensorboard")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside), "--logdir", str(logdir)]
    if importlib.util.find_spec("tensorboard") is not None:
        return [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir)]
    found = shutil.which("tensorboard")
    return [found, "--logdir", str(logdir)] if found else None


def run(command: list[str]) -> int:
    """Run TensorBoard in the foreground until it ends; its exit code.

    Ctrl-C reaches TensorBoard too (the terminal signals the whole foreground group): it gets a few
    seconds to shut down, then the interrupt goes on to the caller (exit 130, as every command).
    """
    process = subprocess.Popen(command)
    try:
        return process.wait()
    except KeyboardInterrupt as exc:
        if isinstance(exc, Terminated):  # smtrain alone was signalled (kill, a CI runner): TensorBoard is told
            process.terminate()
        try:
            process.wait(timeout=_SHUTDOWN_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise
