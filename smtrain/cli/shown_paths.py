"""A path as the user would type it in the next command (light: imported when the CLI starts)."""

from __future__ import annotations

import shlex
from pathlib import Path


def shown_path(path: Path) -> str:
    """`path` relative to the working directory where it is under it, quoted for a shell."""
    try:
        text = str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        text = str(path)
    return shlex.quote(text)
