"""Where the bundled TensorFlow entrypoint is installed.

The distribution ships it as two top-level names, from the repository's entrypoints/ folder:
`smtrain_entry` (the program SageMaker runs) and `smtrain_tf` (its package). They are found by
import machinery without being imported (TensorFlow stays unloaded), so a wheel install and an
editable checkout bundle the same files.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

ENTRY_MODULE = "smtrain_entry"
PACKAGE = "smtrain_tf"


def _located(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"the bundled entrypoint ({name}) is missing from this install of smtrain; "
                                "reinstall it (pip install --force-reinstall smtrain)")
    return Path(spec.origin).resolve()


@functools.lru_cache(maxsize=1)
def entrypoint_parts() -> tuple[Path, Path]:
    """The entry program (smtrain_entry.py) and its package directory (smtrain_tf/), as installed."""
    return _located(ENTRY_MODULE), _located(PACKAGE).parent
