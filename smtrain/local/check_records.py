"""What a check run wrote (smtrain_tf.check): each worker's steps joined into the run's, in replica order."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smtrain_tf.check.settings import FAILED, RECORD


class CannotCheck(Exception):
    """The job's own code told the check it cannot be compared (its message says why)."""


@dataclass(frozen=True)
class StepRecord:
    loss: float  # the step's training loss, the mean over its global batch
    examples: int  # the examples the step trained on, over the job
    learning_rate: float | None
    replicas: tuple[tuple[str, ...], ...]  # each replica's examples (fingerprints), workers in order
    weights_relative: float | None = None  # the weights after the step against the reference's (None: not kept)
    call: int = 1  # the fit call it belongs to (1-based)
    terms: tuple[float, ...] | None = None  # each term of the differentiated loss, summed over replicas


@dataclass(frozen=True)
class RunRecord:
    strategy: str
    workers: int
    replicas: int
    stands_for: int
    steps: tuple[StepRecord, ...]
    batch_norm: tuple[str, ...] = ()  # BatchNormalization layers that are not synchronized
    random_layers: tuple[dict[str, Any], ...] = ()  # {"name", "class", "seed"}
    weights: tuple[dict[str, Any], ...] = field(default=())  # the planned run's: each weight against the reference's
    steps_per_epoch: int = 0  # 0: not recorded
    # each fit call's {"location", "first_step", "steps", "terms": where the script made each loss term}
    calls: tuple[dict[str, Any], ...] = ()


def cannot_check_reason(directory: Path) -> str | None:
    path = directory / FAILED
    return path.read_text(encoding="utf-8").strip() if path.is_file() else None


def read_run(directory: Path) -> RunRecord | None:
    """The run's record, None when no worker wrote one (its code never reached a loop the check records)."""
    why = cannot_check_reason(directory)
    if why:
        raise CannotCheck(why)
    files = sorted(directory.glob(RECORD.format(index="*")), key=lambda p: int(p.stem.split("-")[1]))
    if not files:
        return None
    workers = [json.loads(p.read_text(encoding="utf-8")) for p in files]
    chief = workers[0]
    if chief.get("different_models"):
        raise CannotCheck(chief["different_models"])
    count = min(len(w["steps"]) for w in workers)
    steps = []
    for i in range(count):
        first = chief["steps"][i]
        replicas = tuple(tuple(r) for w in workers for r in w["steps"][i]["replicas"])
        # Recorded inside Keras's fit (smtrain_tf.check.keras_steps): each worker its own replicas.
        losses = [log for w in workers for log in w["steps"][i]["replica_losses"]]
        terms = [t for w in workers for t in w["steps"][i].get("replica_terms") or ()]
        steps.append(StepRecord(loss=_step_loss(losses), examples=sum(len(r) for r in replicas),
                                learning_rate=first["learning_rate"], replicas=replicas,
                                weights_relative=first.get("weights_relative"), call=int(first.get("call") or 1),
                                terms=_summed(terms) if len(terms) == len(replicas) else None))
    found_layers = chief.get("layers") or {}
    return RunRecord(strategy=chief["strategy"], workers=int(chief["workers"]), replicas=int(chief["replicas"]),
                     stands_for=int(chief.get("stands_for") or 1), steps=tuple(steps),
                     batch_norm=tuple(layer["name"] for layer in found_layers.get("batch_norm", ())),
                     random_layers=tuple(found_layers.get("random", ())),
                     weights=tuple(chief.get("weights") or ()), steps_per_epoch=int(chief.get("steps_per_epoch") or 0),
                     calls=tuple(chief.get("calls") or ()))


def _summed(per_replica: list[list[float]]) -> tuple[float, ...] | None:
    """Each loss term added up over the replicas, as the all-reduce adds their gradients; None when the replicas
    did not record the same terms."""
    if not per_replica or not per_replica[0] or any(len(t) != len(per_replica[0]) for t in per_replica):
        return None
    return tuple(math.fsum(values) for values in zip(*per_replica))  # noqa: B905 - same lengths, checked


def _step_loss(losses: list[dict[str, float]]) -> float:
    """A step's loss from each replica's logs: its `loss` (else its first log, a GAN's d_loss), averaged over the
    replicas as Keras averages a step's logs."""
    values = []
    for logs in losses:
        if logs:
            values.append(float(logs["loss"] if "loss" in logs else next(iter(logs.values()))))
    return sum(values) / len(values) if values else math.nan
