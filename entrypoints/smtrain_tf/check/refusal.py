"""A check run's refusal: why this run cannot be checked, written where smtrain reads it, and the process ended."""

from __future__ import annotations

import os
import sys

from .settings import FAILED, CheckSettings


def refuse(settings: CheckSettings, why: str) -> None:
    """Say why this run cannot be checked (smtrain shows it), and end the process."""
    with open(os.path.join(settings.directory, FAILED), "w", encoding="utf-8") as out:
        out.write(why + "\n")
    print(f"check: cannot check: {why}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(3)
