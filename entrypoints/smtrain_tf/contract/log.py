"""The program's output lines: what SageMaker's logs, its metric regexes and the tests read."""

from __future__ import annotations

import sys


def say(line: str) -> None:
    """Print `line` in one write: under PYTHONUNBUFFERED, print() writes the text and its newline
    separately, and mpirun --tag-output (Horovod, smddp) may slip another rank's output between them."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
