"""The wrap's one seeding rule, for the paid run and for `smtrain check` alike: every worker's generators start
from the job's seed.

A script copied from one device often leaves its randomness unseeded: Keras's shuffle of arrays, a tf.data
`shuffle()`, NumPy's permutation of file names, Python's `random` drawing pairs. On one device that is one
draw; on several hosts each would draw its own, so the hosts would train on overlapping shares of the data
and evaluate different examples. So every worker seeds Python's `random`, NumPy's global generator and
TensorFlow's global seed with the same number (what `keras.utils.set_random_seed` does), before the script
runs: what it leaves unseeded is then drawn alike on every host, as one device would draw it, and a seed the
script sets itself replaces this one, as it would on one device. A check's two runs seed by this same rule,
so what it compares is what the paid run draws.
"""

from __future__ import annotations

import random
from typing import Callable


def seed_every_generator(seed: int) -> None:
    """Python's `random`, NumPy's global generator and TensorFlow's global seed, all to `seed`."""
    import numpy as np
    import tensorflow as tf

    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)


def seed_the_workers(seed: int, workers: int, checking: bool, say: Callable[[str], None]) -> bool:
    """The rule: seed every worker alike where there are several (and in both runs of a check, whose one-device run
    must draw as the planned run's workers do); True when it seeded."""
    if workers <= 1 and not checking:
        return False  # one worker draws once, as one device would: its randomness is left as the script has it
    seed_every_generator(seed)
    say(f"wrap: every worker's random generators (Python's random, NumPy's, TensorFlow's) start from seed {seed}, so "
        "that what the script leaves unseeded is drawn alike on every host; a seed the script sets replaces it")
    return True
