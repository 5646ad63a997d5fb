"""smtrain check of a model's own train_step (keras.io's customizing-fit form), recorded inside Keras's own fit as
the paid job runs it: a hand-written loss term left unscaled for the replicas makes the weights part from one
device's, and the check names it at its line; the same term divided by num_replicas_in_sync trains as one device
does (both as a plain TensorFlow oracle finds); a step that raises is the script's failure at its own line. Real
TensorFlow on CPU, each case once (one layout shows each)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import smtrain
from smtrain.api.checking import CannotCheckError
from smtrain.local.check_verdict import WEIGHTS_TOLERANCE
from tests.support.specfiles import write_spec

CODE = Path(__file__).with_name("check_code")

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("own_temp")]


ORACLE = Path(__file__).parents[1] / "support" / "scaling_oracle.py"


@pytest.fixture(scope="module")
def oracle() -> dict[str, float]:
    """Plain TensorFlow, one device against MirroredStrategy on 2 CPU devices (the replicas both checks below
    compare): each penalty's weights difference after 8 steps, relative to their norm."""
    done = subprocess.run([sys.executable, str(ORACLE), "2"], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _spec(tmp_path: Path, digits: Path, nodes: int, instance: str, script: str = "custom_step.py",
          **hyperparameters: Any) -> Path:
    return write_spec(tmp_path, {
        "name": "own-step", "inputs": {"train": str(digits / "train")}, "output": str(tmp_path / "out"),
        "compute": {"instance_type": instance, "nodes": nodes, "max_run": "15m"},
        "code": {"source_dir": str(CODE), "entry_point": script, "wrap": True},
        "hyperparameters": hyperparameters})


def test_an_unscaled_term_in_the_models_own_step_parts_from_one_device(digits: Path, tmp_path: Path,
                                                                        oracle: dict[str, float]) -> None:
    # The oracle: the term added by hand parts from one device by far more than the check's tolerance.
    assert oracle["unscaled"] > 10 * WEIGHTS_TOLERANCE, oracle
    # 1 host x 4 GPUs, checked as 1 host x 2 replicas (2 CPU devices), MirroredStrategy.
    result = smtrain.check(_spec(tmp_path, digits, 1, "ml.g5.12xlarge", penalty="unscaled"), steps=8)
    data = result.to_dict()
    assert not result.equivalent and result.exit_code == 1, data
    assert result.verdict.first_step == 1, data
    assert data["weights_difference"] > 1e-3
    # The cause, measured: the term at its line adds up over the replicas to 2x one device's; compute_loss's, 1x.
    assert [c["kind"] for c in data["causes"]] == ["loss_scaling"], data["causes"]
    scaling = data["causes"][0]
    assert scaling["counts"]["replicas"] == 2
    assert [t["at"] for t in scaling["counts"]["terms"]] == ["custom_step.py:35 (train_step)"], scaling
    assert abs(scaling["counts"]["terms"][0]["ratio"] - 2.0) < 1e-4, scaling
    assert "tf.distribute.get_strategy().num_replicas_in_sync" in scaling["fix"]
    # The weights after every step were set against one device's, inside Keras's own fit.
    assert all(row["weights_relative"] > 0 for row in data["per_step"]), data["per_step"]
    assert any("inside Keras's own fit" in note and "custom_step.py:" in note for note in data["notes"]), data


def test_the_term_scaled_for_the_replicas_trains_as_one_device_on_two_hosts(digits: Path, tmp_path: Path,
                                                                             oracle: dict[str, float]) -> None:
    assert oracle["scaled"] < WEIGHTS_TOLERANCE / 100, oracle  # the oracle: float32 rounding apart
    result = smtrain.check(_spec(tmp_path, digits, 2, "ml.g5.xlarge", penalty="scaled"), steps=8)
    data = result.to_dict()
    assert result.equivalent and data["causes"] == [], data
    assert data["checked_layout"]["hosts"] == 2 and result.verdict.steps == 8
    assert all(row["weights_relative"] < 1e-4 for row in data["per_step"]), data["per_step"]
    # The step logs compute_loss's value, which Keras scales by 1/replicas: the weights agree, the logged loss is
    # half, and the note says so.
    assert any("1/2 of one device's" in note for note in data["notes"]), data["notes"]


def test_a_step_that_raises_fails_the_check_at_its_line(digits: Path, tmp_path: Path) -> None:
    with pytest.raises(CannotCheckError) as raised:
        smtrain.check(_spec(tmp_path, digits, 1, "ml.g5.12xlarge", fail=1), steps=4)
    said = str(raised.value)
    assert "RuntimeError: this step is not written yet" in said and "custom_step.py:29" in said, said
    assert "fails on one device" in said


def test_public_forms_on_two_hosts_draw_alike_and_every_fit_call_is_compared(digits: Path, tmp_path: Path) -> None:
    """Unseeded pairs from Python's random, a list of two inputs, int32 labels, and four fit calls (a teacher, a
    distiller with its own compile and train_step, the student alone, a two-output model with no compiled loss):
    the wrap seeds every host alike, so both hosts train on one device's pairs; each call is compared, and the
    notes say which."""
    result = smtrain.check(write_spec(tmp_path, {
        "name": "forms", "inputs": {"train": str(digits / "train")}, "output": str(tmp_path / "out"),
        "compute": {"instance_type": "ml.g5.xlarge", "nodes": 2, "max_run": "15m"},
        "code": {"source_dir": str(CODE), "entry_point": "forms.py", "wrap": True}}), steps=6)
    data = result.to_dict()
    assert result.equivalent, data
    assert result.verdict.steps == 24, data["per_step"]
    covered = next(note for note in data["notes"] if "fit calls inside Keras's own fit" in note)
    assert covered.startswith("compared 4 fit calls"), covered
    assert "call 1 at forms.py:67 (steps 1-6)" in covered and "call 3 at forms.py:78 (steps 13-18)" in covered
    assert "call 4 at forms.py:117 (steps 19-24)" in covered, covered


def test_a_gan_without_call_trains_wrapped_on_two_hosts_and_gets_a_verdict(digits: Path, tmp_path: Path) -> None:
    """keras.io's GAN form (no call(), two optimizers given to its own compile, fit(x) without labels): Keras 3
    builds a model symbolically at fit only under a strategy, which such a model cannot take; the wrap's repair
    builds it as one device does. The planned run trains to the script's end (its save) and the check compares
    the steps: the d_loss and g_loss it logs, the weights of both sub-models after each step."""
    result = smtrain.check(_spec(tmp_path, digits, 2, "ml.g5.xlarge", "gan.py"), steps=4)
    data = result.to_dict()
    assert result.verdict.steps == 4 and len(data["per_step"]) == 4, data
    assert all(row["weights_relative"] is not None for row in data["per_step"]), data["per_step"]
    # It parts: every replica draws the same latent vectors from the GAN's own SeedGenerator (a mirrored state),
    # one device the whole batch's. Its losses are a loss object's (scaled): no scaling cause.
    assert [c["kind"] for c in data["causes"]] == ["randomness"], data["causes"]
    assert "SeedGenerator ('gan.seed_generator')" in data["causes"][0]["says"]
