"""Where a local run writes, checked and made before its job exists: a bad place is the user's to fix.

A local run writes under two places the user chooses: SMTRAIN_HOME (the job's record, its hosts
and logs) and a local `output` (the bundle at source/<sha256>/, the archives at <job>/output/).
`check` finds what would stop the run there (a file where a directory must be, a directory where a
file goes, a parent that cannot be written) before anything is made; `make` then creates the
directories, and if one still cannot be made (a read-only or virtual file system such as /proc,
where even root cannot write) removes again those it made. Either way a refused run leaves
nothing behind, and the UserError (exit 2) names the path and the setting behind it.

The directories that are wholly the run's (<output>/<job>/, <output>/source/<sha256>/) get
own_places.MARKER once the job exists, so that no later bundle takes them in; `unmake` removes it
with the directory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from smtrain import exit_codes
from smtrain.bundle.own_places import MARKER
from smtrain.errors import UserError

DIRECTORY = "directory"
FILE = "file"  # a file the run writes; its directory is made, the file replaced whole


@dataclass(frozen=True)
class Place:
    path: Path
    setting: str  # what chose it, as the user knows it: "output", "SMTRAIN_HOME"
    root: Path  # the setting's value, named in messages
    remedy: str  # what the user can do about a refusal
    kind: str = DIRECTORY

    @property
    def directory(self) -> Path:
        return self.path if self.kind == DIRECTORY else self.path.parent

    def refusal(self, problem: str) -> UserError:
        """`problem` names a path; the message names the setting too, once."""
        said = problem if problem.startswith(f"{self.root} ") else f"{self.root}: {problem}"
        return UserError(f"{self.setting} {said}; {self.remedy}", exit_codes.USAGE)


def _nearest_existing(path: Path) -> Path:
    """`path` or its closest ancestor that exists (a broken link counts: it is in the way)."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _problem(place: Place) -> str | None:
    if place.kind == FILE and os.path.lexists(place.path) and not place.path.is_file():
        return f"{place.path} is in the way of a file smtrain writes there"
    found = _nearest_existing(place.directory)
    if not found.is_dir():
        return f"{found} is {'a file' if found.is_file() else 'something'}, not a directory"
    if not os.access(found, os.W_OK | os.X_OK):
        return f"{found} is not writable"
    return None


def check(places: Sequence[Place]) -> None:
    """Raise UserError for the first place the run could not write in; makes nothing."""
    for place in places:
        problem = _problem(place)
        if problem is not None:
            raise place.refusal(problem)


def make(places: Sequence[Place]) -> list[Path]:
    """Create every place's directory; the directories made, outermost first, for `unmake`.

    On failure, removes what it made and raises UserError naming the place.
    """
    made: list[Path] = []
    for place in places:
        missing = []
        directory = place.directory
        while not os.path.lexists(directory) and directory != directory.parent:
            missing.append(directory)
            directory = directory.parent
        for directory in reversed(missing):
            try:
                directory.mkdir()
            except FileExistsError:
                if directory.is_dir():
                    continue  # made meanwhile by someone else: not ours to remove
                unmake(made)
                raise place.refusal(f"{directory} is not a directory") from None
            except OSError as exc:
                unmake(made)
                raise place.refusal(f"cannot create {directory}: {exc.strerror or exc}") from None
            made.append(directory)
    return made


def unmake(made: Sequence[Path]) -> None:
    """Remove directories `make` made (innermost first), as long as nothing else was put in them."""
    for directory in reversed(made):
        try:
            if [entry.name for entry in directory.iterdir()] == [MARKER]:
                (directory / MARKER).unlink()
            directory.rmdir()
        except OSError:
            pass
