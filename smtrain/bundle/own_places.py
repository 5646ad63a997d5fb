"""smtrain's own places on this machine, which no bundle takes in: SMTRAIN_HOME, and the directories it marks.

A local run writes its records under SMTRAIN_HOME and its bundle and archives under the spec's
output. When either lies inside the code's source dir, a bundle that took them in would carry the
last run's files into the next job (and its sha256, the bundle's S3 key, would change with every
run). So every directory that is wholly smtrain's gets MARKER, and the walk leaves out a directory
holding it, wherever it lies and whatever the spec says now; the build also leaves out SMTRAIN_HOME
and the spec's local output by their paths, which covers what was written before the marker was.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "SMTRAIN_HOME"
MARKER = ".smtrain-wrote-this"
_MARKER_TEXT = "smtrain wrote this directory; no code bundle takes it in.\n"


def default_home() -> Path:
    """${SMTRAIN_HOME:-~/.smtrain}: where local jobs and tunings keep their records."""
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".smtrain")


def mark(directory: Path) -> None:
    """Mark `directory` (which exists) as written by smtrain; a marked one is left as it is."""
    marker = directory / MARKER
    if not marker.is_file():
        marker.write_text(_MARKER_TEXT, encoding="utf-8")


def is_marked(directory: str | os.PathLike[str]) -> bool:
    return os.path.isfile(os.path.join(directory, MARKER))
