"""Random state in a check run: what the code leaves unseeded is fixed per worker; what it seeds stays as seeded.

In a paid run, randomness a script does not seed (an unseeded shuffle, NumPy's permutation, Python's
random) differs from host to host, while an operation given its own seed draws the same numbers on
every host, and a script that seeds itself draws the same on every host. A check keeps all three and
still compares two runs: each worker's unseeded state starts from the job's seed plus the worker's
index (so the one-device run and the planned run's first worker draw alike, and what one process
draws does not pass for a mistake), set before the user's code runs so that the code's own seeding
replaces it, as it would. TensorFlow combines an op's own seed with a global one once that is set,
which would make a seeded shuffle differ between workers; its seed function is wrapped so that an
op's own seed gives what it gives without a global seed (TensorFlow's default graph seed).
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, Callable, Mapping, Optional, Tuple

from .settings import SEED_VAR


def worker_index(environ: Optional[Mapping[str, str]] = None) -> int:
    """This process's place among the workers, from the container contract alone: its task in TF_CONFIG (a
    chief first), else its host's place in SM_HOSTS. Only its seed depends on it."""
    env = os.environ if environ is None else environ
    try:
        config = json.loads(env.get("TF_CONFIG") or "{}")
        task = config.get("task") or {}
        if task.get("type") == "worker":
            return int(task.get("index", 0)) + (1 if (config.get("cluster") or {}).get("chief") else 0)
        if task.get("type") in ("chief", "master"):
            return 0
        hosts = json.loads(env.get("SM_HOSTS") or "[]")
        return hosts.index(env["SM_CURRENT_HOST"]) if env.get("SM_CURRENT_HOST") in hosts else 0
    except (ValueError, TypeError, AttributeError):
        return 0


def worker_seed(environ: Optional[Mapping[str, str]] = None) -> int:
    env = os.environ if environ is None else environ
    return int(env.get(SEED_VAR) or 42) + worker_index(env)


def seed_python_and_numpy(value: int) -> None:
    """At `import smtrain_tf`, before a script's own seeding (which then wins, as in a paid run)."""
    random.seed(value)
    try:
        import numpy as np
    except ImportError:
        return
    np.random.seed(value)


def _keep_op_seeds() -> bool:
    """An op's own seed made independent of the global seed, as it is when none is set. False if TensorFlow's
    seed function is not where it was (then a seeded op may differ between workers, in the check only)."""
    try:
        from tensorflow.python.framework import random_seed
    except ImportError:
        return False
    original = getattr(random_seed, "get_seed", None)
    default = getattr(random_seed, "DEFAULT_GRAPH_SEED", None)
    truncate = getattr(random_seed, "_truncate_seed", None)
    if getattr(original, "_smtrain_check", False):
        return True
    if original is None or default is None or truncate is None:
        return False

    def get_seed(op_seed: Optional[int]) -> Tuple[Any, Any]:
        if op_seed is None:
            return original(op_seed)
        return default, truncate(op_seed)  # as TensorFlow's own get_seed gives it without a global seed

    get_seed._smtrain_check = True  # type: ignore[attr-defined]
    random_seed.get_seed = get_seed
    return True


def seed_tensorflow(value: int, say: Callable[[str], None]) -> None:
    """TensorFlow's global seed for this worker, unless the code already set one (it wins, as in a paid run)."""
    from tensorflow.python.eager import context

    if context.global_seed() is not None:
        return
    import tensorflow as tf

    tf.random.set_seed(value)
    kept = _keep_op_seeds()
    say(f"check: unseeded randomness seeded with {value} (the job's seed + this worker's index)"
        + ("" if kept else "; note: ops with a seed of their own may differ between workers in this check"))


def seed_this_worker(value: int, say: Callable[[str], None]) -> None:
    """Python's, NumPy's and TensorFlow's (the wrap, before the user's script runs)."""
    seed_python_and_numpy(value)
    seed_tensorflow(value, say)
