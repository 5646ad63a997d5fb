"""`smtrain check`'s output from hand-made results: the text (smtrain.cli.check_render) and -o json / yaml
(CheckResult.to_dict, as smtrain.cli.check_command.show prints it). No run: tests/api/test_check.py runs."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from smtrain.api.checking import CheckResult
from smtrain.cli.check_command import show
from smtrain.cli.check_render import check_text
from smtrain.local.check_verdict import TOLERANCE_WHY, Cause, Verdict, failed

PER_STEP = ({"step": 1, "one_device": 2.302585, "planned_run": 2.3025852, "relative": 8.7e-8},
            {"step": 2, "one_device": 2.1, "planned_run": 2.1000021, "relative": 1.0e-6},
            {"step": 3, "one_device": 1.9, "planned_run": 1.9000004, "relative": 2.1e-7})
TWO_BY_ONE = {"hosts": 2, "replicas_per_host": 1, "replicas": 2, "strategy": "multi_worker_mirrored"}


def _result(verdict: Verdict, *, planned: dict[str, Any] | None = None, checked: dict[str, Any] | None = None,
            notes: tuple[str, ...] = ()) -> CheckResult:
    return CheckResult(job="digits-local", program="bundled", verdict=verdict,
                       planned_layout=planned or dict(TWO_BY_ONE), checked_layout=checked or dict(TWO_BY_ONE),
                       one_device={"stands_for": 2, "global_batch": 64, "learning_rate": 0.002},
                       seconds={"one_device": 5.24, "planned": 7.0}, notes=notes)


def _equivalent() -> Verdict:
    return Verdict(equivalent=True, steps=3, loss_difference=1.0e-6, loss_step=2, weights_difference=3.4e-6,
                   weights_name="dense/kernel", first_step=None, per_step=PER_STEP)


BATCH_NORM = Cause("batch_norm", "per-replica statistics: BatchNormalization (bn) normalises each replica's share",
                   "use synchronized batch normalization: tf.keras.layers.BatchNormalization(synchronized=True)",
                   {"layers": ["bn"]})
DROPOUT = Cause("randomness", "per-replica randomness: Dropout dropout draw random values per replica",
                "check the rest with `smtrain check --random-layers off`", {"layers": [{"name": "dropout"}]})


def _parted() -> Verdict:
    rows = (PER_STEP[0], {"step": 2, "one_device": 2.1, "planned_run": 2.2, "relative": 0.0454545})
    return Verdict(equivalent=False, steps=2, loss_difference=0.0454545, loss_step=2, weights_difference=0.02,
                   weights_name="bn/gamma", first_step=2, causes=(BATCH_NORM, DROPOUT), per_step=rows)


def test_equivalent_says_the_differences_the_tolerances_and_why() -> None:
    assert check_text(_result(_equivalent())) == "\n".join([
        "check digits-local: equivalent",
        "  planned       2 hosts x 1 replica (multi_worker_mirrored)",
        "  checked on    2 hosts x 1 replica (multi_worker_mirrored), as planned",
        "  one device    standing for 2 replicas: global batch 64, learning rate 0.002",
        "  loss          3 steps, largest relative difference 1.0e-06 (step 2); tolerance 0.0001",
        "  weights       after step 3: relative difference 3.4e-06 (most in dense/kernel); tolerance 0.001",
        f"  tolerances    {TOLERANCE_WHY}",
        "  time          one device 5.2s, planned layout 7.0s"])
    assert "float32 sums added in another order" in TOLERANCE_WHY


def test_not_equivalent_says_the_step_and_each_cause_with_its_fix() -> None:
    text = check_text(_result(_parted()))
    lines = text.splitlines()
    assert lines[0] == "check digits-local: not equivalent, from step 2"
    assert "  step 2        loss 2.1 on one device, 2.2 in the planned layout (relative difference 4.5e-02)" in lines
    start = lines.index(f"  cause         {BATCH_NORM.says}")
    assert lines[start:start + 4] == [f"  cause         {BATCH_NORM.says}", f"  fix           {BATCH_NORM.fix}",
                                      f"  cause         {DROPOUT.says}", f"  fix           {DROPOUT.fix}"]
    assert "  weights       after step 2: relative difference 2.0e-02 (most in bn/gamma); tolerance 0.001" in lines
    assert "tolerances" not in text  # the why of the tolerance belongs to an equivalent verdict


def test_a_failed_planned_run_has_no_step_to_show() -> None:
    text = check_text(_result(failed("Host algo-2 exited with 1")))
    lines = text.splitlines()
    assert lines[0] == "check digits-local: not equivalent, from step 1"
    assert "  cause         the planned run failed where one device did not: Host algo-2 exited with 1" in lines
    assert not any(line.startswith(("  loss ", "  weights ", "  step ")) for line in lines), text


def test_a_smaller_layout_is_said_with_a_note() -> None:
    note = ("checked on 1 host(s) x 2 replica(s), the planned layout is 1 x 4: the same structure, smaller")
    planned = {"hosts": 1, "replicas_per_host": 4, "replicas": 4, "strategy": "mirrored", "gpu": "A10G"}
    checked = {"hosts": 1, "replicas_per_host": 2, "replicas": 2, "strategy": "mirrored"}
    lines = check_text(_result(_equivalent(), planned=planned, checked=checked, notes=(note,))).splitlines()
    assert "  planned       1 host x 4 replicas (mirrored, A10G)" in lines
    assert "  checked on    1 host x 2 replicas (mirrored): the same structure, smaller" in lines
    assert f"  note          {note}" in lines


def test_a_secret_in_a_cause_is_masked() -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    verdict = failed(f"Host algo-1: could not read s3://bucket with {key}")
    assert key not in check_text(_result(verdict))


KEYS = {"job", "equivalent", "program", "planned_layout", "checked_layout", "one_device", "seconds", "notes", "steps",
        "loss_difference", "loss_step", "weights_difference", "weights_name", "first_step", "causes", "per_step",
        "loss_tolerance", "weights_tolerance", "tolerance_why"}


def test_json_keys(capsys: pytest.CaptureFixture[str]) -> None:
    result = _result(_parted(), notes=("smaller",))
    show(result, "json")
    data = json.loads(capsys.readouterr().out)
    assert set(data) == KEYS
    assert data["equivalent"] is False and data["first_step"] == 2 and data["notes"] == ["smaller"]
    assert data["causes"][0] == {"kind": "batch_norm", "says": BATCH_NORM.says, "fix": BATCH_NORM.fix,
                                 "counts": {"layers": ["bn"]}}
    assert data["per_step"][1] == {"step": 2, "one_device": 2.1, "planned_run": 2.2, "relative": 0.0454545}
    assert data["one_device"] == {"stands_for": 2, "global_batch": 64, "learning_rate": 0.002}
    assert (data["loss_tolerance"], data["weights_tolerance"]) == (1e-4, 1e-3)
    assert result.exit_code == 1 and _result(_equivalent()).exit_code == 0


def test_yaml_has_the_same_keys(capsys: pytest.CaptureFixture[str]) -> None:
    show(_result(_equivalent()), "yaml")
    data = yaml.safe_load(capsys.readouterr().out)
    assert set(data) == KEYS and data["equivalent"] is True and data["first_step"] is None


def _strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_json_of_a_failed_run_is_strict_json(capsys: pytest.CaptureFixture[str]) -> None:
    """RFC 8259 has no Infinity or NaN (jq and JavaScript's JSON.parse refuse them): a failed run's
    loss difference, or a step whose loss was NaN, must still give a document every parser reads."""
    verdict = failed("Host algo-2 exited with 1")
    assert verdict.loss_difference is None  # no step to compare
    show(_result(verdict), "json")
    data = _strict(capsys.readouterr().out)
    assert data["causes"][0]["kind"] == "failed" and data["loss_difference"] is None


def test_the_notebook_table_has_the_same_rows_as_the_text_masked() -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    result = _result(failed(f"Host algo-1: could not read s3://bucket with {key}"))
    html = result._repr_html_()
    assert "check digits-local: not equivalent, from step 1" in html
    assert [label for label, _ in result.rows()] == ["planned", "checked on", "one device", "cause", "fix", "time"]
    assert "could not read s3://bucket" in html and key not in html


def test_a_nan_loss_reads_nan_in_the_text_and_null_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    rows = ({"step": 1, "one_device": 2.3, "planned_run": float("nan"), "relative": float("inf")},)
    verdict = Verdict(equivalent=False, steps=1, loss_difference=float("inf"), loss_step=1, weights_difference=None,
                      weights_name=None, first_step=1, causes=(DROPOUT,), per_step=rows)
    text = check_text(_result(verdict))
    assert "largest relative difference nan (step 1)" in text
    assert "  step 1        loss 2.3 on one device, nan in the planned layout (relative difference nan)" in text
    show(_result(verdict), "json")
    data = _strict(capsys.readouterr().out)
    assert data["per_step"][0]["planned_run"] is None and data["loss_difference"] is None
