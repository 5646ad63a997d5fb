"""Runs the user's file as `python script.py args...` would: as __main__, with its own argv and sys.path[0]."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from types import TracebackType
from typing import List, Optional, Sequence

from . import notebook_lines


def run(path: str, args: Sequence[str], keep_importable: str) -> None:
    """Run `path` as __main__ with sys.argv = [path, *args]; the working directory is left alone.

    `keep_importable` (the wrap's own directory) stays on sys.path behind the script's directory,
    so that `import smtrain_tf` keeps working when the script lives elsewhere.
    """
    script_dir = os.path.dirname(path)
    sys.argv = [path, *args]
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.append(script_dir)
    if keep_importable not in sys.path:
        sys.path.insert(1, keep_importable)
    runpy.run_path(path, run_name="__main__")


def user_traceback(exc: BaseException, path: str) -> List[str]:
    """The traceback from the script's own first frame on: what `python script.py` would have shown (for a
    notebook's script, the notebook's cell and line in its frames)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    lines = traceback.format_exception(type(exc), exc, tb if tb is not None else exc.__traceback__)
    return notebook_lines.traceback_lines(lines, path)  # a notebook's script: its frames by cell and line


def innermost_line(tb: Optional[TracebackType], path: str) -> Optional[int]:
    """The line of the script at `path` where the exception left it last (its deepest frame there)."""
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            found = tb.tb_lineno
        tb = tb.tb_next
    return found
