"""What smtrain tells a check run, through the hosts' environment (plain Python: smtrain imports it too).

    SMTRAIN_CHECK_DIR         this run's directory: each worker's record, the chief's weights
    SMTRAIN_CHECK_STEPS       the steps to record; the process ends after them
    SMTRAIN_CHECK_STANDS_FOR  the reference run only: the replicas its one device stands for, so that the
                              batch and learning-rate rules give the planned run's global batch and rate
    SMTRAIN_CHECK_REFERENCE   the planned run only: the reference's directory (its starting weights are
                              loaded, its final weights compared)
    SMTRAIN_CHECK_RANDOM_LAYERS  off: dropout and noise layers do nothing in either run (the rest is compared)
    SMTRAIN_CHECK_SEED        the job's seed: each worker's unseeded randomness starts from it plus its index
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Optional

DIR_VAR = "SMTRAIN_CHECK_DIR"
STEPS_VAR = "SMTRAIN_CHECK_STEPS"
STANDS_FOR_VAR = "SMTRAIN_CHECK_STANDS_FOR"
REFERENCE_VAR = "SMTRAIN_CHECK_REFERENCE"
RANDOM_VAR = "SMTRAIN_CHECK_RANDOM_LAYERS"  # off: dropout and noise layers do nothing in both runs
SEED_VAR = "SMTRAIN_CHECK_SEED"  # the job's seed (training.seed, else 42): each worker's is this + its index

RECORD = "worker-{index}.json"  # one per worker
START_WEIGHTS = "start.npz"  # the reference's, before its first step
END_WEIGHTS = "end.npz"  # each run's chief's, after the last step
FAILED = "cannot-check.txt"  # why this run could not be checked (one line)


@dataclass(frozen=True)
class CheckSettings:
    directory: str
    steps: int
    stands_for: int  # 1 outside the reference run
    reference: Optional[str]  # the reference run's directory, in the planned run
    random_layers: bool = True

    @property
    def is_reference(self) -> bool:
        return self.reference is None


def read(environ: Optional[Mapping[str, str]] = None) -> Optional[CheckSettings]:
    """The settings when this process is a check run, else None."""
    env = os.environ if environ is None else environ
    directory = env.get(DIR_VAR)
    if not directory:
        return None
    return CheckSettings(directory=directory, steps=max(int(env.get(STEPS_VAR) or 20), 1),
                         stands_for=max(int(env.get(STANDS_FOR_VAR) or 1), 1), reference=env.get(REFERENCE_VAR) or None,
                         random_layers=(env.get(RANDOM_VAR) or "on").strip().lower() != "off")


def stands_for() -> int:
    """How many replicas each device here stands for: N in the reference run, else 1."""
    found = read()
    return found.stands_for if found is not None else 1
