"""Where a line of the job's code is, as the check names it: `train.py:31`, relative to the script's directory."""

from __future__ import annotations

import os
from typing import Optional

# smtrain_tf's own files, never the job's code (a bundle may carry the package beside the script).
_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_place(filename: str, line: int, script_dir: str) -> Optional[str]:
    """`train.py:31` for a line of a file under `script_dir`; None for a file outside it, or smtrain_tf's own."""
    if filename.startswith(_OURS + os.sep) or not filename.startswith(script_dir + os.sep):
        return None
    return f"{os.path.relpath(filename, script_dir)}:{line}"
