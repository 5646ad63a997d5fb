"""A check run's records read back (smtrain.local.check_records.read_run): each worker's file, as
entrypoints/smtrain_tf/check/keras_steps.py writes it, joined into the run's steps in worker order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smtrain.local.check_records import CannotCheck, RunRecord, StepRecord, read_run
from smtrain.local.check_verdict import compare


def _worker(index: int, workers: int, steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """One worker's record, with keras_steps.py's keys."""
    return {"worker": index, "workers": workers, "replicas": workers, "local_replicas": 1,
            "strategy": "multi_worker_mirrored", "stands_for": 1,
            "layers": {"batch_norm": [], "random": []}, "steps": steps, **extra}


def _step(loss: float, replicas: list[list[str]], rate: float | None = 0.002,
          weights: float | None = None) -> dict[str, Any]:
    """A step as keras_steps.py records it inside Keras's fit: the logs of each of this worker's replicas."""
    return {"call": 1, "replica_losses": [{"loss": loss} for _ in replicas], "replica_terms": [[] for _ in replicas],
            "learning_rate": rate, "replicas": replicas, "weights_relative": weights}


def _write(directory: Path, records: list[dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for record in records:
        (directory / f"worker-{record['worker']}.json").write_text(json.dumps(record), encoding="utf-8")
    return directory


def test_workers_are_joined_in_index_order(tmp_path: Path) -> None:
    """worker-10 comes after worker-2 (by number, not by name), so its replica's examples come last."""
    workers = 11
    records = [_worker(i, workers, [_step(2.0 + i, [[f"w{i}s{s}"]]) for s in range(2)])
               for i in range(workers)]
    run = read_run(_write(tmp_path, records))
    assert run is not None and run.workers == workers and len(run.steps) == 2
    assert run.steps[1].replicas == tuple((f"w{i}s1",) for i in range(workers))


def test_the_chief_gives_the_steps_numbers_and_every_worker_its_examples(tmp_path: Path) -> None:
    chief = _worker(0, 2, [_step(2.25, [["a", "a2"], ["b", "b2"]], weights=1e-7), _step(2.0, [["e"], ["f"]]),
                           _step(1.5, [["i"], ["j"]])],
                    stands_for=None, replicas=4, local_replicas=2,
                    layers={"batch_norm": [{"name": "bn", "class": "BatchNormalization"}],
                            "random": [{"name": "dropout", "class": "Dropout", "seed": 3}]},
                    weights=[{"name": "dense/kernel:0", "difference": 1e-6, "norm": 3.0, "relative": 3e-7,
                              "largest": 1e-7}])
    other = _worker(1, 2, [_step(2.75, [["c", "c2"], ["d", "d2"]], rate=None),
                           _step(2.0, [["g"], ["h"]])], replicas=4, local_replicas=2)  # one step fewer
    run = read_run(_write(tmp_path, [other, chief]))
    assert run == RunRecord(
        strategy="multi_worker_mirrored", workers=2, replicas=4, stands_for=1,
        # The step's loss: every replica's logged loss, averaged; its examples: every replica's, added up; the rate
        # and the weights: the chief's.
        steps=(StepRecord(loss=2.5, examples=8, learning_rate=0.002, weights_relative=1e-7,
                          replicas=(("a", "a2"), ("b", "b2"), ("c", "c2"), ("d", "d2"))),
               StepRecord(loss=2.0, examples=4, learning_rate=0.002, replicas=(("e",), ("f",), ("g",), ("h",)))),
        batch_norm=("bn",), random_layers=({"name": "dropout", "class": "Dropout", "seed": 3},),
        weights=({"name": "dense/kernel:0", "difference": 1e-6, "norm": 3.0, "relative": 3e-7, "largest": 1e-7},))
    assert isinstance(run.steps[0].examples, int)


def test_a_file_being_written_is_not_a_record(tmp_path: Path) -> None:
    """keras_steps.py writes worker-N.json.tmp and renames it: a run that died between the two wrote no record."""
    (tmp_path / "worker-0.json.tmp").write_text("{", encoding="utf-8")
    assert read_run(tmp_path) is None


def test_no_record_is_none(tmp_path: Path) -> None:
    (tmp_path / "start.npz").write_bytes(b"")  # what the reference writes before its first step
    assert read_run(tmp_path) is None


def test_a_run_that_cannot_be_checked_says_why(tmp_path: Path) -> None:
    why = "a parameter-server job trains on workers the chief only schedules: its steps cannot be compared"
    _write(tmp_path, [_worker(0, 1, [_step(2.0, [["a"]])])])  # the refusal wins over any record
    (tmp_path / "cannot-check.txt").write_text(why + "\n", encoding="utf-8")
    with pytest.raises(CannotCheck) as caught:
        read_run(tmp_path)
    assert str(caught.value) == why


def test_records_read_back_are_compared(tmp_path: Path) -> None:
    """The reference (one device standing for 2 replicas) and the planned run (2 workers) as keras_steps.py writes
    them: the same examples per step, so the verdict is on the numbers alone."""
    batches = [["a", "b", "c", "d"], ["e", "f", "g", "h"]]
    reference = read_run(_write(tmp_path / "one-device", [
        _worker(0, 1, [_step(2.0 - s, [batches[s]], weights=0.0) for s in range(2)], stands_for=2)]))
    planned = read_run(_write(tmp_path / "planned", [
        _worker(i, 2, [_step(2.0 - s + 1e-7, [batches[s][2 * i:2 * i + 2]], weights=1e-7) for s in range(2)],
                **({"weights": [{"name": "kernel", "difference": 1e-6, "norm": 1.0}]} if i == 0 else {}))
        for i in range(2)]))
    assert reference is not None and planned is not None and reference.stands_for == 2
    verdict = compare(reference, planned)
    assert verdict.equivalent and verdict.steps == 2 and verdict.weights_difference == pytest.approx(1e-6)


def _keras_step(replicas: list[list[str]], terms: list[list[float]]) -> dict[str, Any]:
    """A step as smtrain_tf.check.keras_steps records it inside Keras's fit: per replica, its logs and loss terms."""
    return {**_step(1.0, replicas, weights=0.0), "replica_terms": terms}


def test_in_keras_fit_each_loss_term_is_added_up_over_every_worker_s_replicas(tmp_path: Path) -> None:
    calls = [{"location": "train.py:40", "first_step": 1, "steps": 1, "terms": ["train.py:31", "train.py:33"]}]
    chief = _worker(0, 2, [_keras_step([["a"], ["b"]], [[0.5, 0.25], [0.5, 0.125]])], calls=calls,
                    replicas=4, local_replicas=2)
    other = _worker(1, 2, [_keras_step([["c"], ["d"]], [[0.25, 0.5], [0.5, 1.0]])], replicas=4, local_replicas=2)
    run = read_run(_write(tmp_path, [chief, other]))
    assert run is not None and run.steps[0].terms == (1.75, 1.875) and run.calls[0]["terms"] == calls[0]["terms"]
    # Replicas that did not record the same terms: none to add up.
    other["steps"][0]["replica_terms"] = [[0.25], [0.5]]
    assert read_run(_write(tmp_path / "uneven", [chief, other])).steps[0].terms is None  # type: ignore[union-attr]
    other["steps"][0]["replica_terms"] = [[], []]
    chief["steps"][0]["replica_terms"] = [[], []]
    assert read_run(_write(tmp_path / "none", [chief, other])).steps[0].terms is None  # type: ignore[union-attr]
