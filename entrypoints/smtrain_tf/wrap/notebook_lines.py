"""A notebook's lines in what the wrap says: smtrain runs `code.entry_point: train.ipynb` as the script it made
from the notebook (train_ipynb.py), whose marker comments (`# %% train.ipynb cell 3` before each cell's lines, one
script line per cell line) lead back to the cell and its line. Nothing but the script itself is read."""

from __future__ import annotations

import functools
import re
from types import TracebackType
from typing import List, Optional, Tuple

# The first line of a script smtrain made from a notebook (smtrain.spec.notebook.HEADER).
HEADER = "# Made by smtrain from the notebook "
_MARKER = re.compile(r"# %% (.+) cell (\d+)")
_FRAME = re.compile(r'^(\s*File )"([^"\n]+)", line (\d+)', re.MULTILINE)


@functools.lru_cache(maxsize=8)
def _cells(path: str) -> Tuple[Tuple[int, str, int], ...]:
    """(script line of a marker, notebook, cell) for a notebook's script; () for any other file."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
    except (OSError, UnicodeDecodeError, ValueError):
        return ()
    if not lines or not lines[0].startswith(HEADER):
        return ()
    found = []
    for number, line in enumerate(lines, start=1):
        match = _MARKER.fullmatch(line)
        if match:
            found.append((number, match.group(1), int(match.group(2))))
    return tuple(found)


def where(path: str, line: int) -> Optional[str]:
    """`train.ipynb, cell 3, line 2` for line `line` of the file at `path`; None unless it is a notebook's script
    (or the line is its header)."""
    found = None
    for marker, notebook, cell in _cells(path):
        if marker >= line:
            break
        found = f"{notebook}, cell {cell}, line {line - marker}"
    return found


def traceback_lines(lines: List[str], path: str) -> List[str]:
    """A formatted traceback with the frames of the notebook's script at `path` named by cell and line."""
    if not _cells(path):
        return lines

    def named(match: "re.Match[str]") -> str:
        if match.group(2) != path:
            return match.group(0)
        place = where(path, int(match.group(3)))
        if place is None:
            return match.group(0)
        notebook, _, rest = place.partition(", ")
        return f'{match.group(1)}"{notebook}", {rest}'

    return [_FRAME.sub(named, text) for text in lines]


def innermost(tb: Optional[TracebackType], path: str) -> Optional[str]:
    """Where the exception left the notebook last: its deepest frame in the script at `path`."""
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            found = where(path, tb.tb_lineno)
        tb = tb.tb_next
    return found
