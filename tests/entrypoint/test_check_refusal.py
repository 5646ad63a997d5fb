"""A check of a job smtrain's own loop trains (parameter server, Horovod/smddp, Keras 2 with gradient
accumulation) is refused by the job, saying why: the check records steps inside Keras's own fit only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ENTRYPOINTS

PROGRAM = r"""
import sys
from types import SimpleNamespace
sys.path.insert(0, sys.argv[1])
from smtrain_tf.training import loop
loop.train(None, dist=SimpleNamespace(kind=sys.argv[2]), runner=None, steps=None, checkpointer=None, validation=None,
           start=None, started_at=0.0, heartbeat=None, emit=print)
print("trained")
"""


@pytest.mark.parametrize(("kind", "said"), [
    ("parameter_server", "a parameter-server job trains on workers the chief only schedules: its steps cannot be "
                         "compared one by one"),
    ("horovod", "strategy horovod is not checked yet (tf.distribute strategies are)"),
    ("smddp", "strategy smddp is not checked yet (tf.distribute strategies are)"),
    ("default", "gradient_accumulation_steps under Keras 2 trains in smtrain's own loop (Keras 2's optimizers "
                "accumulate nothing), which a check does not record: check it with gradient_accumulation_steps=1 "
                "(the layout, batches and rate rules are the same), or train on Keras 3 (TensorFlow 2.16+), whose "
                "optimizer accumulates in Keras's own fit"),
])
def test_why_smtrain_s_own_loop_is_not_checked(kind: str, said: str) -> None:
    from smtrain_tf.distribute import choice
    from smtrain_tf.training import loop

    assert kind in (choice.PS, choice.HOROVOD, choice.SMDDP, choice.DEFAULT)
    assert loop._why_not_checked(kind) == said


def test_the_loop_refuses_a_check_before_its_first_step_and_the_process_ends(tmp_path: Path) -> None:
    env = {**os.environ, "SMTRAIN_CHECK_DIR": str(tmp_path), "SMTRAIN_CHECK_STEPS": "3"}
    done = subprocess.run([sys.executable, "-c", PROGRAM, ENTRYPOINTS, "default"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 3 and "trained" not in done.stdout, (done.stdout, done.stderr[-2000:])
    why = (tmp_path / "cannot-check.txt").read_text(encoding="utf-8")
    assert why.startswith("gradient_accumulation_steps under Keras 2 trains in smtrain's own loop") and why.endswith(
        "fit\n")
    assert f"check: cannot check: {why.strip()}" in done.stderr
