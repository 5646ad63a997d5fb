"""Replacing a TensorFlow function under every name it is loaded as.

TensorFlow's public modules are generated copies that import their functions from where they
are defined; a later `import tensorflow.saved_model...` can even load a second copy of one and
put it in place of `tf.saved_model`. Replacing the function in every loaded TensorFlow module
that holds it, the defining one included, keeps all of them on the replacement.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence


def replace(original: Callable[..., Any], replacement: Callable[..., Any], aliases: Sequence[str] = ()) -> None:
    """`original` becomes `replacement` under its own name and `aliases` (e.g. an experimental name)."""
    names = (original.__name__, *aliases)
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("tensorflow") or module is None:
            continue
        for name in names:
            if getattr(module, name, None) is original:
                setattr(module, name, replacement)
