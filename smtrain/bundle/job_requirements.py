"""The lines smtrain adds to the job's requirements.txt: tf-keras for `tensorflow.keras: 2` (smtrain.plan.keras_choice).

SageMaker's toolkit pip-installs the requirements.txt at the root of the code before the program starts, and a
local run installs the same file into the job's own environment, so one line reaches both. The user's file
(code.requirements, or the source directory's own requirements.txt) keeps its lines and comes first; the added
lines follow under a comment that says where they come from. A requirement the user's file already names (by
its project name, as pip normalises it) is left to the user's line.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from smtrain.bundle.archive import sort_key
from smtrain.bundle.model import REQUIREMENTS_NAME, PlannedBundle, PlannedFile

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
MARKER = "# added by smtrain: "  # the comment above the added lines: the end of the user's part


def _project(line: str) -> str | None:
    """A requirement line's project name, normalised as pip does (PEP 503); None for options and comments."""
    found = _NAME.match(line)
    return re.sub(r"[-_.]+", "-", found.group(1)).lower() if found else None


def with_added(planned: PlannedBundle, added: tuple[str, ...], why: str) -> PlannedBundle:
    """`planned` whose requirements.txt also holds each of `added` not named there already (one made if none)."""
    if not added:
        return planned
    current = next((f for f in planned.files if f.path == REQUIREMENTS_NAME), None)
    text = ""
    if current is not None:
        text = (current.content if current.content is not None else Path(current.source).read_bytes()).decode(
            "utf-8", errors="replace")
    named = {_project(line) for line in text.splitlines()}
    lines = [line for line in added if _project(line) not in named]
    if not lines:
        return planned
    content = (text + ("\n" if text and not text.endswith("\n") else "")
               + f"{MARKER}{why}\n" + "".join(f"{line}\n" for line in lines)).encode()
    made = PlannedFile(REQUIREMENTS_NAME, current.source if current else f"(smtrain: {why})", len(content), False,
                       current.origin if current else "requirements", content=content)
    files = [f for f in planned.files if f is not current] + [made]
    return replace(planned, files=tuple(sorted(files, key=lambda f: sort_key(f.path))))


def split_added(text: str) -> tuple[str, list[str]]:
    """A bundled requirements.txt's text as (the user's part, the requirement lines smtrain added)."""
    if text.startswith(MARKER):
        at = 0
    else:
        found = text.find("\n" + MARKER)
        if found < 0:
            return text, []
        at = found + 1
    added = [line.strip() for line in text[at:].splitlines()[1:] if line.strip() and not line.startswith("#")]
    return text[:at], added
