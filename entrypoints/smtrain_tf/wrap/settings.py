"""What smtrain tells the wrap, through the environment the job's request carries (no TensorFlow).

    SMTRAIN_WRAP_SCRIPT   the user's script, relative to the code directory (or absolute)
    SMTRAIN_WRAP_BATCH    per_replica (default): fit's batch_size is one replica's; global: as written
    SMTRAIN_LR_SCALING    none (default), linear or sqrt: rescale the compiled optimizer's rate
    SMTRAIN_WRAP_TUNING   on (default): fit runs several steps per call (fit_tuning.py); off: as compiled
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from ..contract.errors import ConfigurationError, TrainingFailure
from ..scaling import LR_SCALING_RULES

SCRIPT_VAR = "SMTRAIN_WRAP_SCRIPT"
BATCH_VAR = "SMTRAIN_WRAP_BATCH"
LR_VAR = "SMTRAIN_LR_SCALING"
TUNING_VAR = "SMTRAIN_WRAP_TUNING"

PER_REPLICA = "per_replica"
GLOBAL = "global"
BATCH_RULES = (PER_REPLICA, GLOBAL)
ON, OFF = "on", "off"


class ScriptMissing(TrainingFailure):
    """No script to run: the job cannot start (exit status 1, like any failed script)."""


@dataclass(frozen=True)
class WrapSettings:
    script: str  # absolute path of the user's file
    batch: str  # PER_REPLICA or GLOBAL
    lr_scaling: str  # one of LR_SCALING_RULES
    tuning: bool = True  # fit_tuning.py's steps per call

    @property
    def script_dir(self) -> str:
        return os.path.dirname(self.script)


def _choice(environ: Mapping[str, str], name: str, choices: tuple, default: str) -> str:
    value = (environ.get(name) or "").strip().lower() or default
    if value not in choices:
        raise ConfigurationError(f"{name}={environ.get(name)!r}: expected one of {', '.join(choices)}")
    return value


def read(environ: Mapping[str, str], code_dir: str) -> WrapSettings:
    """The settings; a relative script path is taken from `code_dir` (where SageMaker unpacks the bundle)."""
    name = (environ.get(SCRIPT_VAR) or "").strip()
    if not name:
        raise ScriptMissing(f"{SCRIPT_VAR} is not set: the wrap needs the script to run "
                                 "(code.entry_point in the job spec)")
    path = os.path.abspath(os.path.join(code_dir, name))
    if not os.path.isfile(path):
        raise ScriptMissing(f"{SCRIPT_VAR}={name}: no such file {path} in the code directory")
    return WrapSettings(script=path, batch=_choice(environ, BATCH_VAR, BATCH_RULES, PER_REPLICA),
                        lr_scaling=_choice(environ, LR_VAR, LR_SCALING_RULES, "none"),
                        tuning=_choice(environ, TUNING_VAR, (ON, OFF), ON) == ON)
