"""Where the bundled TensorFlow entrypoint is installed.

The distribution ships it as three top-level names, from the repository's entrypoints/ folder:
`smtrain_entry` (the program SageMaker runs by default), `smtrain_wrap` (the program that runs a
user's unchanged script inside the strategy, code.wrap) and `smtrain_tf` (their package). They are
found by import machinery without being imported (TensorFlow stays unloaded), so a wheel install
and an editable checkout bundle the same files.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

ENTRY_MODULE = "smtrain_entry"
WRAP_MODULE = "smtrain_wrap"
PACKAGE = "smtrain_tf"


def _located(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"the bundled entrypoint ({name}) is missing from this install of smtrain; "
                                "reinstall it (pip install --force-reinstall smtrain)")
    return Path(spec.origin).resolve()


@functools.lru_cache(maxsize=1)
def entrypoint_parts() -> tuple[Path, Path, Path]:
    """The programs (smtrain_entry.py, smtrain_wrap.py) and their package directory (smtrain_tf/), as installed."""
    return _located(ENTRY_MODULE), _located(WRAP_MODULE), _located(PACKAGE).parent
