"""smtrain check's verdict on two runs' records (smtrain.local.check_verdict), from hand-made records.

The one-device run (the reference) stands for the planned replicas; the planned run has one list of
example fingerprints per replica. Each cause is planted alone, and what the verdict says is read back:
its kind, its counts, its text and its fix. No TensorFlow: tests/api/test_check.py trains for real.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import pytest

from smtrain.local.check_records import RunRecord, StepRecord
from smtrain.local.check_verdict import WEIGHTS_TOLERANCE, Verdict, compare, failed

Replicas = Sequence[Sequence[str]]


def _step(replicas: Replicas, loss: float = 2.0, rate: float | None = 0.002,
          examples: int | None = None) -> StepRecord:
    return StepRecord(loss=loss, examples=sum(len(r) for r in replicas) if examples is None else examples,
                      learning_rate=rate, replicas=tuple(tuple(r) for r in replicas))


def _run(steps: Sequence[StepRecord], replicas: int, *, stands_for: int = 1, batch_norm: Sequence[str] = (),
         random_layers: Sequence[dict[str, Any]] = (), weights: Sequence[dict[str, Any]] = ()) -> RunRecord:
    return RunRecord(strategy="multi_worker_mirrored" if replicas > 1 else "default", workers=replicas,
                     replicas=replicas, stands_for=stands_for, steps=tuple(steps), batch_norm=tuple(batch_norm),
                     random_layers=tuple(random_layers), weights=tuple(weights))


def _fingerprints(step: int, count: int) -> list[str]:
    return [f"e{step * 100 + i}" for i in range(count)]


def _reference(steps: int = 4, batch: int = 8, losses: Sequence[float] | None = None,
               rate: float | None = 0.002) -> RunRecord:
    """One device standing for 2 replicas: one list of `batch` examples per step."""
    losses = losses or [2.0 - 0.1 * i for i in range(steps)]
    return _run([_step([_fingerprints(i, batch)], loss=losses[i], rate=rate) for i in range(steps)], 1,
                stands_for=2)


def _split(reference: RunRecord, losses: Sequence[float] | None = None, rate: float | None = 0.002,
           **extra: Any) -> RunRecord:
    """The planned run on 2 replicas taking the reference's examples, each step's batch split in two."""
    steps = []
    for i, theirs in enumerate(reference.steps):
        examples = theirs.replicas[0]
        half = len(examples) // 2
        loss = theirs.loss if losses is None else losses[i]
        steps.append(_step([examples[:half], examples[half:]], loss=loss, rate=rate))
    return _run(steps, 2, **extra)


def _weights(difference: float, norm: float = 10.0) -> list[dict[str, Any]]:
    """compare_end's rows (smtrain_tf.check.weights): one kernel and one bias."""
    return [{"name": "dense/kernel", "difference": difference, "norm": norm, "relative": difference / norm,
             "largest": difference},
            {"name": "dense/bias", "difference": difference / 100, "norm": norm / 10,
             "relative": difference / norm / 10, "largest": difference / 100}]


def _only(verdict: Verdict) -> Any:
    assert len(verdict.causes) == 1, verdict.causes
    return verdict.causes[0]


# --- equivalent -------------------------------------------------------------------------------------------------


def test_float32_rounding_differences_are_equivalent_and_reported() -> None:
    reference = _reference()
    losses = [s.loss * (1 + 3e-7 * (i + 1)) for i, s in enumerate(reference.steps)]  # grows a little each step
    verdict = compare(reference, _split(reference, losses=losses, weights=_weights(2e-5)))
    assert verdict.equivalent and verdict.causes == () and verdict.first_step is None
    assert verdict.steps == 4
    assert verdict.loss_difference == pytest.approx(1.2e-6, rel=1e-3) and verdict.loss_step == 4
    assert verdict.weights_difference == pytest.approx(2e-5 * math.sqrt(1 + 1e-4) / math.sqrt(101), rel=1e-6)
    assert verdict.weights_name == "dense/kernel"
    assert (verdict.loss_tolerance, verdict.weights_tolerance) == (1e-4, 1e-3)  # pinned here, not read back
    assert "float32 sums added in another order" in verdict.tolerance_why
    assert [row["step"] for row in verdict.per_step] == [1, 2, 3, 4]
    assert verdict.per_step[0] == {"step": 1, "one_device": 2.0, "planned_run": losses[0],
                                   "relative": pytest.approx(3e-7, rel=1e-3)}


def test_a_batch_split_differently_between_replicas_is_the_same_step() -> None:
    """The step's loss is a sum over its examples: which replica took which does not matter, only the set."""
    reference = _reference(steps=2, batch=4)
    steps = [_step([[e[0], e[3]], [e[2], e[1]]], loss=s.loss) for s in reference.steps for e in [s.replicas[0]]]
    verdict = compare(reference, _run(steps, 2))
    assert verdict.equivalent, verdict.causes
    assert verdict.weights_difference is None and verdict.weights_name is None  # no weights written: none shown


def test_the_weights_difference_is_over_all_weights_not_each_alone() -> None:
    # A bias whose true gradient is zero (one before BatchNormalization) moves by rounding noise alone, and Adam
    # divides each update by the gradient's own running scale, so noise of 1e-9 becomes a full step of the rate:
    # that bias alone differs by 200% between the runs while the model, all its weights together, by 2e-6.
    reference = _reference()
    weights = [{"name": "dense/kernel", "difference": 1e-5, "norm": 10.0, "relative": 1e-6, "largest": 1e-6},
               {"name": "dense/bias", "difference": 2e-5, "norm": 1e-5, "relative": 2.0, "largest": 2e-5}]
    verdict = compare(reference, _split(reference, weights=weights))
    assert verdict.equivalent, verdict.causes
    assert verdict.weights_difference == pytest.approx(math.sqrt(5e-10) / 10, rel=1e-6)
    assert verdict.weights_name == "dense/bias"  # the one that differs most is still named


def test_only_the_steps_both_runs_recorded_are_compared() -> None:
    reference = _reference(steps=5)
    planned = _split(reference)
    verdict = compare(reference, _run(planned.steps[:3], 2))
    assert verdict.equivalent and verdict.steps == 3 and len(verdict.per_step) == 3


# --- global batch -----------------------------------------------------------------------------------------------


def test_a_per_replica_batch_given_as_global_trains_on_fewer_examples() -> None:
    reference = _reference(batch=64)
    planned = _run([_step([e[:16], e[16:32]], loss=s.loss * 1.01)
                    for s in reference.steps for e in [s.replicas[0]]], 2, batch_norm=("batch_normalization",))
    verdict = compare(reference, planned)
    # The batch explains it: data and rate are not looked at on other examples, nor the per-replica layers.
    cause = _only(verdict)
    assert cause.kind == "global_batch" and cause.counts == {"planned_run": 32, "one_device": 64}
    assert cause.says == ("global batch: each step of the planned run trains on 32 examples (16 per replica, "
                          "2 replicas), one device with the planned batch on 64 (32 per replica)")
    assert "multiply it by the replicas" in cause.fix and "num_replicas_in_sync" in cause.fix
    assert "code.wrap_batch: global" in cause.fix
    assert not verdict.equivalent and verdict.first_step == 1


def test_a_global_batch_multiplied_again_trains_on_more_examples() -> None:
    reference = _reference(batch=8)
    planned = _run([_step([_fingerprints(i, 8), _fingerprints(i + 50, 8)]) for i in range(4)], 2)
    cause = _only(compare(reference, planned))
    assert cause.kind == "global_batch" and cause.counts == {"planned_run": 16, "one_device": 8}
    assert "16 examples (8 per replica, 2 replicas)" in cause.says
    assert "multiplied by the replicas again" in cause.fix and "training.batch_size_per_replica" in cause.fix
    assert "num_replicas_in_sync" not in cause.fix


# --- data -------------------------------------------------------------------------------------------------------


def _overlapping(losses: Sequence[float] | None = None) -> tuple[RunRecord, RunRecord]:
    """Step 1 alike; in step 2 both replicas take e1 and one takes e5 from step 1 again; in step 3 one replica
    takes e9 twice. Taken again: e1, e5, e9 (3); never taken: e7, e8, e12 (3); one same-step overlap (e1 in
    step 2: e9 twice on one replica is not two replicas)."""
    reference = _run([_step([["e1", "e2", "e3", "e4"]]), _step([["e5", "e6", "e7", "e8"]]),
                      _step([["e9", "e10", "e11", "e12"]])], 1, stands_for=2)
    losses = losses or [2.0, 2.0, 2.0]
    planned = _run([_step([["e1", "e2"], ["e3", "e4"]], loss=losses[0]),
                    _step([["e1", "e6"], ["e1", "e5"]], loss=losses[1]),
                    _step([["e9", "e9"], ["e10", "e11"]], loss=losses[2])], 2)
    return reference, planned


def test_workers_that_overlap_are_counted() -> None:
    reference, planned = _overlapping(losses=[2.0, 2.1, 2.2])
    verdict = compare(reference, planned)
    cause = _only(verdict)
    assert cause.kind == "data"
    assert cause.counts == {"first_step": 2, "examples": 12, "taken_again": 3, "never_taken": 3,
                            "same_step_overlaps": 1}
    assert cause.says == ("data: in 3 steps the planned run's 2 replicas took 12 examples: 3 of them more often than "
                          "one device did (duplicated) and 3 of one device's never; 1 times two replicas got the same "
                          "example in the same step")
    assert "shuffle" in cause.fix and "seed=" in cause.fix and "split first" in cause.fix
    assert verdict.first_step == 2  # where the loss parts


def test_overlapping_data_is_found_even_when_the_loss_happens_to_agree() -> None:
    reference, planned = _overlapping()
    verdict = compare(reference, planned)
    assert not verdict.equivalent and _only(verdict).kind == "data"
    assert verdict.first_step == 2  # no loss parts: the first step whose examples differ


def test_examples_taken_twice_across_steps_without_a_same_step_overlap_are_data_not_order() -> None:
    reference = _run([_step([["e1", "e2", "e3", "e4"]]), _step([["e5", "e6", "e7", "e8"]])], 1, stands_for=2)
    planned = _run([_step([["e1", "e2"], ["e3", "e4"]]), _step([["e1", "e2"], ["e7", "e8"]], loss=2.2)], 2)
    cause = _only(compare(reference, planned))
    assert cause.kind == "data" and cause.says.startswith("data: in 2 steps")
    assert (cause.counts["taken_again"], cause.counts["never_taken"], cause.counts["same_step_overlaps"]) == (2, 2, 0)


def test_the_same_examples_in_another_order() -> None:
    reference = _run([_step([["e1", "e2", "e3", "e4"]]), _step([["e5", "e6", "e7", "e8"]])], 1, stands_for=2)
    planned = _run([_step([["e1", "e2"], ["e3", "e5"]], loss=2.01), _step([["e4", "e6"], ["e7", "e8"]], loss=2.02)],
                   2)
    verdict = compare(reference, planned)
    cause = _only(verdict)
    assert cause.kind == "data"
    assert cause.says == ("data order: the planned run takes the same examples as one device in another order "
                          "(step 1 shares 3 of its 4 examples with one device's)")
    assert "shuffle before batching" in cause.fix
    assert cause.counts["taken_again"] == cause.counts["never_taken"] == cause.counts["same_step_overlaps"] == 0
    assert verdict.first_step == 1


# --- learning rate ----------------------------------------------------------------------------------------------


def test_a_rate_scaled_twice() -> None:
    reference = _reference(rate=0.002)
    verdict = compare(reference, _split(reference, rate=0.004, losses=[s.loss * 0.99 for s in reference.steps]),
                      "linear")
    cause = _only(verdict)
    assert cause.kind == "learning_rate"
    assert cause.counts == {"planned_run": 0.004, "one_device": 0.002, "ratio": 2.0}
    assert cause.says == "learning rate: the planned run trains at 0.004, one device with the planned batch at 0.002 (2x)"
    assert cause.fix.startswith("the rate is scaled for the replicas twice: by the spec (training.lr_scaling: linear) "
                                "and by the script (scales the rate with the replicas itself")
    assert verdict.first_step == 1


def test_a_rate_scaled_by_the_script_alone_is_not_called_scaled_twice() -> None:
    reference = _reference(rate=0.002)
    cause = _only(compare(reference, _split(reference, rate=0.004, losses=[s.loss * 0.99 for s in reference.steps])))
    assert "twice" not in cause.fix
    assert cause.fix.startswith("the script scales the rate with the replicas itself")
    assert "the spec scales nothing (training.lr_scaling is not set)" in cause.fix


def test_every_cause_found_is_reported_most_certain_first() -> None:
    reference = _reference(batch=64)
    smaller = _run([_step([e[:16], e[16:32]], loss=s.loss * 1.01, rate=0.004) for s in reference.steps
                    for e in [s.replicas[0]]], 2)
    verdict = compare(reference, smaller, "linear")
    assert [c.kind for c in verdict.causes] == ["global_batch", "learning_rate"]  # no data cause on other batches
    reference = _reference(batch=8)
    overlapping = _run([_step([_fingerprints(i, 4), _fingerprints(i, 4)], loss=s.loss * 1.01, rate=0.004)
                        for i, s in enumerate(reference.steps)], 2)
    assert [c.kind for c in compare(reference, overlapping).causes] == ["data", "learning_rate"]


def test_a_rate_not_scaled() -> None:
    reference = _reference(rate=0.002)
    cause = _only(compare(reference, _split(reference, rate=0.001)))
    assert cause.kind == "learning_rate" and cause.counts["ratio"] == 0.5
    assert "(0.5x)" in cause.says
    assert "not scaled as the plan says" in cause.fix and "twice" not in cause.fix


def test_a_rate_within_rounding_or_unknown_is_no_cause() -> None:
    reference = _reference(rate=0.002)
    assert compare(reference, _split(reference, rate=0.002 * (1 + 1e-7))).equivalent
    assert compare(_reference(rate=None), _split(reference, rate=0.004)).equivalent  # not recorded: not compared


# --- per-replica layers -----------------------------------------------------------------------------------------

BATCH_NORM = ("batch_normalization",)
DROPOUT = {"name": "dropout", "class": "Dropout", "seed": None}
SEEDED_DROPOUT = {"name": "dropout_1", "class": "Dropout", "seed": 1}


def _parting_in_training_only(**layers: Any) -> tuple[RunRecord, RunRecord]:
    """Same examples and rate; from step 2 the training loss differs."""
    reference = _reference()
    losses = [s.loss * (1.05 if i >= 1 else 1) for i, s in enumerate(reference.steps)]
    return reference, _split(reference, losses=losses, **layers)


def test_batch_norm_when_only_the_training_loss_differs() -> None:
    verdict = compare(*_parting_in_training_only(batch_norm=BATCH_NORM))
    cause = _only(verdict)
    assert cause.kind == "batch_norm" and cause.counts == {"layers": ["batch_normalization"]}
    assert cause.says == ("per-replica statistics: BatchNormalization (batch_normalization) normalises each replica's "
                          "share of the batch (2 replicas), one device the whole batch")
    assert "BatchNormalization(synchronized=True)" in cause.fix and "SyncBatchNormalization" in cause.fix
    assert verdict.first_step == 2


def test_batch_norm_on_one_replica_is_not_per_replica() -> None:
    reference, planned = _parting_in_training_only(batch_norm=BATCH_NORM)
    verdict = compare(reference, _run(planned.steps, 1, batch_norm=BATCH_NORM))
    assert _only(verdict).kind == "unexplained"


def test_unseeded_random_layers() -> None:
    verdict = compare(*_parting_in_training_only(random_layers=[DROPOUT]))
    cause = _only(verdict)
    assert cause.kind == "randomness" and cause.counts == {"layers": [DROPOUT]}
    assert cause.says == ("per-replica randomness: Dropout layer 'dropout' draws its random values on each replica, "
                          "for that replica's share of the batch")
    assert "one device cannot draw the replicas' masks" in cause.fix and "expected" in cause.fix
    assert "under Keras 3" in cause.fix and "--random-layers off" in cause.fix
    assert "`smtrain check --random-layers off`" in cause.fix and "same random mask" not in cause.fix


def test_seeded_random_layers_repeat_their_masks() -> None:
    cause = _only(compare(*_parting_in_training_only(random_layers=[DROPOUT, SEEDED_DROPOUT])))
    assert cause.kind == "randomness" and "Dropout layer 'dropout', Dropout layer 'dropout_1' draw their" in cause.says
    assert "same random mask" in cause.fix and "leave the layer's seed out" in cause.fix
    assert "`smtrain check --random-layers off`" in cause.fix


def test_batch_norm_and_dropout_together_are_both_named() -> None:
    verdict = compare(*_parting_in_training_only(batch_norm=BATCH_NORM, random_layers=[DROPOUT]))
    assert [c.kind for c in verdict.causes] == ["batch_norm", "randomness"]


# --- weights only, first step, failure --------------------------------------------------------------------------


def test_weights_that_part_with_every_loss_alike_are_unexplained() -> None:
    reference = _reference()
    verdict = compare(reference, _split(reference, weights=_weights(0.05)))
    assert not verdict.equivalent
    assert verdict.weights_difference == pytest.approx(0.05 * math.sqrt(1 + 1e-4) / (10 * math.sqrt(1.01)), rel=1e-6)
    cause = _only(verdict)
    assert cause.kind == "unexplained" and cause.says == ("the runs part at the weights after step 4, with the same "
                                                          "examples, batch and rate")
    assert verdict.first_step == 4


def test_weights_that_part_with_a_per_replica_layer_name_it_at_the_last_step() -> None:
    reference = _reference()
    verdict = compare(reference, _split(reference, weights=_weights(0.05), batch_norm=BATCH_NORM))
    assert _only(verdict).kind == "batch_norm" and verdict.first_step == 4


def test_a_nan_loss_parts() -> None:
    reference = _reference()
    losses = [s.loss for s in reference.steps]
    losses[2] = math.nan
    verdict = compare(reference, _split(reference, losses=losses))
    assert not verdict.equivalent and verdict.first_step == 3
    assert verdict.loss_difference == math.inf and verdict.loss_step == 3


def test_the_first_cause_found_gives_the_first_step_when_no_loss_parts() -> None:
    reference = _reference()
    assert compare(reference, _split(reference, rate=0.004)).first_step == 1  # the rate acts from step 1
    data_reference, data_planned = _overlapping()
    assert compare(data_reference, data_planned).first_step == 2


def test_data_and_rate_together_are_both_named() -> None:
    reference, planned = _overlapping()
    planned = _run([_step(s.replicas, rate=0.004) for s in planned.steps], 2)
    assert [c.kind for c in compare(reference, planned).causes] == ["data", "learning_rate"]


def test_a_nan_anywhere_in_the_verdict_is_null_in_its_json() -> None:
    reference = _reference()
    losses = [s.loss for s in reference.steps]
    losses[1] = math.nan
    data = compare(reference, _split(reference, losses=losses)).to_dict()
    assert data["per_step"][1]["planned_run"] is None and data["loss_difference"] is None
    assert data["per_step"][0]["planned_run"] == reference.steps[0].loss


def test_a_batch_cause_on_one_replica_says_the_batch_per_replica_whole() -> None:
    reference = _run([_step([_fingerprints(i, 8)]) for i in range(2)], 1)
    planned = _run([_step([_fingerprints(i, 16)], loss=2.2) for i in range(2)], 1)
    assert _only(compare(reference, planned)).says == (
        "global batch: each step of the planned run trains on 16 examples (16 per replica, 1 replica), one device "
        "with the planned batch on 8 (8 per replica)")


def test_a_failed_planned_run() -> None:
    verdict = failed("Host algo-2 exited with 1")
    assert not verdict.equivalent and verdict.first_step == 1 and verdict.steps == 0
    cause = _only(verdict)
    assert cause.kind == "failed"
    assert cause.says == "the planned run failed where one device did not: Host algo-2 exited with 1"
    assert "smtrain submit --local" in cause.fix


def test_a_failed_planned_run_is_told_by_the_script_s_own_last_error_line() -> None:
    reason = ('AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "Traceback (most recent call '
              'last): /  File \"train.py\", line 9, in <module> / ValueError: shapes (8, 3) and (4,) differ"\n'
              'Command "/usr/bin/python3 train.py"')
    cause = _only(failed(reason))
    assert cause.says == "the planned run failed where one device did not: ValueError: shapes (8, 3) and (4,) differ"


def test_a_rate_schedule_the_same_in_both_runs_is_no_cause() -> None:
    # Warm-up: the rate rises step by step in both runs alike; each run's first step is what is compared.
    rates = [0.001, 0.002, 0.003, 0.004]
    reference = _run([_step([_fingerprints(i, 8)], loss=2.0 - 0.1 * i, rate=r) for i, r in enumerate(rates)], 1,
                     stands_for=2)
    planned = _run([_step([_fingerprints(i, 8)[:4], _fingerprints(i, 8)[4:]], loss=2.0 - 0.1 * i, rate=r)
                    for i, r in enumerate(rates)], 2)
    verdict = compare(reference, planned)
    assert verdict.equivalent and verdict.causes == ()


def test_two_zero_losses_differ_by_nothing() -> None:
    from smtrain.local.check_verdict import relative

    assert relative(0.0, 0.0) == 0.0 and relative(1.0, 0.0) == 1.0 and relative(2.0, 1.0) == 0.5


def test_examples_one_device_never_had_are_augmentation_not_overlap() -> None:
    # Worker 2 changes its examples at random (an unseeded augmentation in the input pipeline): its features
    # match none of one device's, which is no duplicate and no missing example but randomness in the data.
    # The data holds 4 examples (an epoch of 1 step): another choice from it would have met one device's
    # examples 4 x 8 / 4 = 8 times, and met none.
    one = dataclasses.replace(_run([_step([["a", "b", "c", "d"]], 2.3), _step([["e", "f", "g", "h"]], 2.2)],
                                   replicas=1), steps_per_epoch=1)
    planned = _run([_step([["a", "b"], ["c*", "d*"]], 2.31), _step([["e", "f"], ["g*", "h*"]], 2.21)], replicas=2)
    cause = compare(one, planned).causes[0]
    assert cause.kind == "randomness" and cause.counts["changed"] == 4
    assert "4 of the 8 examples" in cause.says and "augmentation" in cause.says


def test_too_few_steps_of_much_data_do_not_call_a_shuffle_augmentation() -> None:
    # The same records from data of 60,000 examples: an unseeded shuffle's examples would rarely meet one
    # device's 8 by chance, so nothing tells the two apart: a data cause that names both.
    one = dataclasses.replace(_run([_step([["a", "b", "c", "d"]], 2.3), _step([["e", "f", "g", "h"]], 2.2)],
                                   replicas=1), steps_per_epoch=15_000)
    planned = _run([_step([["a", "b"], ["c*", "d*"]], 2.31), _step([["e", "f"], ["g*", "h*"]], 2.21)], replicas=2)
    cause = compare(one, planned).causes[0]
    assert cause.kind == "data" and "augmentation" in cause.fix and "--check-steps" in cause.fix


@pytest.mark.parametrize("factor, equivalent", [(1 + 5e-5, True), (1 + 1e-4, True), (1 + 2e-4, False),
                                               (1 + 1e-3, False)])
def test_the_loss_tolerance_between_rounding_and_a_mistake(factor: float, equivalent: bool) -> None:
    """Below and at the tolerance (1e-4, written here) is rounding (equivalent); past it a parting, and one the
    examples, batch and rate do not explain (a tolerance loosened tenfold fails the last case)."""
    reference = _reference()
    verdict = compare(reference, _split(reference, losses=[s.loss * factor for s in reference.steps]))
    assert verdict.equivalent is equivalent
    assert [c.kind for c in verdict.causes] == ([] if equivalent else ["unexplained"])


def _keras(run: RunRecord, weights: Sequence[float | None]) -> RunRecord:
    """The run as recorded inside Keras's fit: the weights after each step against the reference's, one fit call."""
    steps = tuple(dataclasses.replace(step, weights_relative=w) for step, w in zip(run.steps, weights, strict=True))
    calls = ({"location": "train.py:40", "first_step": 1, "steps": len(steps)},)
    return dataclasses.replace(run, steps=steps, calls=calls)


def test_in_keras_fit_the_weights_after_each_step_decide_and_the_first_parting_step_is_named() -> None:
    reference = _reference()
    at = WEIGHTS_TOLERANCE
    same = _keras(_split(reference), [at / 10] * 4)
    verdict = compare(reference, same)
    assert verdict.equivalent, verdict.causes
    assert [row["weights_relative"] for row in verdict.per_step] == [at / 10] * 4
    assert verdict.notes == ("compared 1 fit call inside Keras's own fit, the model's own train_step recorded, "
                             "4 steps in all: call 1 at train.py:40 (steps 1-4)",)
    # At the tolerance still equivalent; past it, from that step on, not (and nothing measured explains it).
    assert compare(reference, _keras(_split(reference), [0.0, at, at, at])).equivalent
    parted = compare(reference, _keras(_split(reference), [0.0, 0.0, at * 1.01, at * 3]))
    assert not parted.equivalent and parted.first_step == 3
    assert [c.kind for c in parted.causes] == ["unexplained"]


def test_a_logged_loss_of_one_nth_with_agreeing_weights_is_a_note_not_a_parting() -> None:
    reference = _reference()
    halved = _keras(_split(reference, losses=[s.loss / 2 for s in reference.steps]), [1e-7] * 4)
    verdict = compare(reference, halved)
    assert verdict.equivalent and verdict.causes == ()
    assert any("1/2 of one device's at every step" in note for note in verdict.notes), verdict.notes
    other = _keras(_split(reference, losses=[s.loss * 1.5 for s in reference.steps]), [1e-7] * 4)
    found = compare(reference, other)
    assert found.equivalent and "the loss the step logs does not" in found.notes[-1]
    # No weights kept per step (the reference kept none of that shape): the loss still decides.
    assert not compare(reference, _split(reference, losses=[s.loss / 2 for s in reference.steps])).equivalent


def test_in_keras_fit_layers_are_named_when_the_weights_part_with_the_same_examples_batch_and_rate() -> None:
    reference = _reference()
    planned = _keras(_split(reference, batch_norm=["bn"]), [0.05] * 4)
    verdict = compare(reference, planned)
    assert [c.kind for c in verdict.causes] == ["batch_norm"] and verdict.first_step == 1


def _with_terms(run: RunRecord, terms: Sequence[float] | None, places: Sequence[str]) -> RunRecord:
    """Each step's loss terms (summed over the replicas), the call's places for them."""
    steps = tuple(dataclasses.replace(step, terms=None if terms is None else tuple(terms)) for step in run.steps)
    calls = tuple({**call, "terms": list(places)} for call in run.calls)
    return dataclasses.replace(run, steps=steps, calls=calls)


TERMS_AT = ("train.py:31 (train_step)", "train.py:33 (train_step)")


@pytest.mark.parametrize(("ratio", "named"), [(2.0, True), (2.0 * 1.049, True), (2.0 * 1.051, False),
                                              (2.0 * 0.951, True), (2.0 * 0.949, False), (1.0, False)])
def test_a_term_that_adds_up_to_n_times_one_device_s_is_the_scaling_cause_at_its_line(ratio: float,
                                                                                      named: bool) -> None:
    # The replicas' sum of the first term against one device's: 2x on 2 replicas (within 5%) is computed whole on
    # each replica; 1x is scaled. The second term is Keras's compute_loss, scaled (1x).
    reference = _with_terms(_keras(_reference(), [0.0] * 4), [0.8, 0.25], TERMS_AT)
    planned = _with_terms(_keras(_split(reference), [0.01] * 4), [0.8, 0.25 * ratio], TERMS_AT)
    verdict = compare(reference, planned)
    kinds = [c.kind for c in verdict.causes]
    if not named:
        assert kinds == ["unexplained"], verdict.causes
        return
    assert kinds == ["loss_scaling"] and verdict.first_step == 1
    cause = verdict.causes[0]
    assert cause.says.startswith("loss scaling: the loss term made at train.py:33 (train_step) adds up over the 2 "
                                 "replicas to 2x one device's"), cause.says
    assert "train.py:31" not in cause.says and "num_replicas_in_sync" in cause.fix
    assert cause.counts == {"replicas": 2, "terms": [{"at": TERMS_AT[1], "ratio": ratio}]}


def test_a_term_scaled_twice_adds_up_to_one_nth_and_agreeing_weights_name_no_term() -> None:
    reference = _with_terms(_keras(_reference(), [0.0] * 4), [0.8, 0.25], TERMS_AT)
    twice = compare(reference, _with_terms(_keras(_split(reference), [0.01] * 4), [0.4, 0.25], TERMS_AT))
    assert [c.kind for c in twice.causes] == ["loss_scaling"]
    assert "train.py:31 (train_step) adds up over the 2 replicas to 1/2 of one device's" in twice.causes[0].says
    # A 2x term with weights that agree (Adam's steps barely move for a loss scaled as a whole): no cause at all.
    agreeing = compare(reference, _with_terms(_keras(_split(reference), [1e-6] * 4), [1.6, 0.5], TERMS_AT))
    assert agreeing.equivalent and agreeing.causes == ()


def test_terms_are_set_against_each_other_only_where_both_runs_made_the_same_ones() -> None:
    reference = _with_terms(_keras(_reference(), [0.0] * 4), [0.8, 0.25], TERMS_AT)
    planned = _keras(_split(reference), [0.01] * 4)
    other_places = _with_terms(planned, [0.8, 0.5], (TERMS_AT[0], "train.py:34 (train_step)"))
    assert [c.kind for c in compare(reference, other_places).causes] == ["unexplained"]
    one_missing = _with_terms(planned, [0.8], TERMS_AT)
    assert [c.kind for c in compare(reference, one_missing).causes] == ["unexplained"]
    zero = _with_terms(_keras(_reference(), [0.0] * 4), [0.8, 0.0], TERMS_AT)  # no ratio to a zero term
    assert [c.kind for c in compare(zero, _with_terms(planned, [0.8, 0.5], TERMS_AT)).causes] == ["unexplained"]


def test_a_seed_generator_of_the_model_s_own_is_named_apart_from_random_layers() -> None:
    reference = _reference()
    generator = {"name": "gan.seed_generator", "class": "SeedGenerator", "seed": 1337}
    dropout = {"name": "dropout", "class": "Dropout", "seed": None}
    planned = _keras(_split(reference, random_layers=[generator, dropout]), [0.05] * 4)
    causes = compare(reference, planned).causes
    assert [c.kind for c in causes] == ["randomness", "randomness"]
    assert "SeedGenerator ('gan.seed_generator')" in causes[0].says and "same values" in causes[0].says
    assert causes[0].counts == {"seed_generators": [generator]}
    assert "Dropout layer 'dropout'" in causes[1].says and causes[1].counts == {"layers": [dropout]}


@pytest.mark.parametrize(("ratio", "named"), [(0.5 * 1.049, True), (0.5 * 1.051, False), (0.5 * 0.951, True),
                                              (0.5 * 0.949, False)])
def test_the_scaled_twice_band_at_below_and_past_its_tolerance(ratio: float, named: bool) -> None:
    reference = _with_terms(_keras(_reference(), [0.0] * 4), [0.8, 0.25], TERMS_AT)
    verdict = compare(reference, _with_terms(_keras(_split(reference), [0.01] * 4), [0.8 * ratio, 0.25], TERMS_AT))
    assert [c.kind for c in verdict.causes] == (["loss_scaling"] if named else ["unexplained"]), verdict.causes


def test_a_model_s_later_fit_call_which_starts_from_its_own_weights_is_not_set_against_one_device_s() -> None:
    reference = _with_terms(_keras(_reference(), [0.0] * 4), [0.8, 0.25], TERMS_AT)
    planned = _with_terms(_keras(_split(reference), [0.01] * 4), [0.8, 0.5], TERMS_AT)
    later = dataclasses.replace(planned, calls=tuple({**call, "same_start": False} for call in planned.calls))
    assert [c.kind for c in compare(reference, later).causes] == ["unexplained"]
