"""The first steps of a check run, one at a time, written down; then the process ends.

For each step: the examples each local replica was given (a fingerprint of each example's features),
the loss on them before the step with the model in inference mode (no dropout, BatchNormalization's
moving statistics), the step's own training loss, the examples it counted and the learning rate. The
chief also writes the weights after the last step; in the planned run it sets them against the
reference's. What smtrain compares is in these records; nothing here decides.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Any, Dict, List

import numpy as np
import tensorflow as tf

from ..distribute.choice import HOROVOD, PS, SMDDP
from ..keras_support.measures import COUNT, LOSS
from ..keras_support.optimization import current_learning_rate
from . import layers, weights
from .settings import FAILED, RECORD, CheckSettings


def fingerprints(values: Any) -> List[str]:
    """One short hash per example (row) of a batch's features, all inputs together."""
    arrays = [np.asarray(v) for v in values]
    rows = int(arrays[0].shape[0]) if arrays and arrays[0].ndim else 0
    found = []
    for i in range(rows):
        digest = hashlib.blake2b(digest_size=8)
        for array in arrays:
            digest.update(np.ascontiguousarray(array[i]).tobytes())
        found.append(digest.hexdigest())
    return found


def _per_replica_examples(strategy: tf.distribute.Strategy, features: Any) -> List[List[str]]:
    """Each local replica's examples, in replica order."""
    parts = [strategy.experimental_local_results(t) for t in tf.nest.flatten(features)]
    return [fingerprints([part[r] for part in parts]) for r in range(len(parts[0]))]


def _step_functions(strategy: tf.distribute.Strategy, steps: Any) -> Any:
    def reduce(per_replica: Any) -> Any:
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    @tf.function
    def train(batch: Any) -> Any:
        return reduce(strategy.run(steps.replica_train_step, args=tuple(batch)))

    @tf.function
    def inference(batch: Any) -> Any:
        return reduce(strategy.run(steps.replica_eval_step, args=tuple(batch)[:2]))

    return train, inference


def _mean(stats: np.ndarray) -> float:
    return float(stats[LOSS] / stats[COUNT]) if stats[COUNT] else float("nan")


def refuse(settings: CheckSettings, why: str) -> None:
    """Say why this run cannot be checked (smtrain shows it), and end the process."""
    with open(os.path.join(settings.directory, FAILED), "w", encoding="utf-8") as out:
        out.write(why + "\n")
    print(f"check: cannot check: {why}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(3)


def run(settings: CheckSettings, dist: Any, runner: Any, steps: Any, steps_per_epoch: int) -> None:
    """Run and record `settings.steps` steps from the runner's iterator; never returns (the process ends).
    `steps_per_epoch` is recorded: with
    the batch it tells how many examples the data holds (smtrain weighs chance meetings by it)."""
    if dist.kind == PS:
        refuse(settings, "a parameter-server job trains on workers the chief only schedules: its steps cannot be "
                         "compared one by one")
    if dist.kind in (HOROVOD, SMDDP):
        refuse(settings, f"strategy {dist.kind} is not checked yet (tf.distribute strategies are)")
    model = steps.model
    try:
        weights.start_alike(settings, model)
    except weights.DifferentModels as exc:
        refuse(settings, str(exc))
    if not settings.random_layers:
        off = layers.switch_off_random(model)
        print(f"check: random layers off: {', '.join(off) or 'none found'}", flush=True)
    strategy = dist.strategy
    train, inference = _step_functions(strategy, steps)
    iterator = runner.iterator
    records: List[Dict[str, Any]] = []
    for _ in range(settings.steps):
        batch = next(iterator)
        seen = _per_replica_examples(strategy, batch[0])
        before = inference(batch).numpy().astype(np.float64)
        rate = current_learning_rate(steps.optimizer)
        rate = None if rate is None else float(f"{rate:.7g}")  # a float32's digits, not its binary tail
        stats = train(batch).numpy().astype(np.float64)
        records.append({"loss": _mean(stats), "inference_loss": _mean(before), "examples": float(stats[COUNT]),
                        "learning_rate": rate, "replicas": seen})
    record: Dict[str, Any] = {
        "worker": dist.worker_index, "workers": dist.num_workers, "replicas": dist.num_replicas,
        "local_replicas": len(records[0]["replicas"]) if records else 0, "strategy": dist.kind,
        "stands_for": settings.stands_for, "layers": layers.inventory(model), "steps_per_epoch": int(steps_per_epoch),
        "steps": records}
    if dist.is_chief:
        weights.save_end(settings, model)
        if not settings.is_reference:
            try:
                record["weights"] = weights.compare_end(settings, model)
            except weights.DifferentModels as exc:
                refuse(settings, str(exc))
    path = os.path.join(settings.directory, RECORD.format(index=dist.worker_index))
    with open(path + ".tmp", "w", encoding="utf-8") as out:
        json.dump(record, out)
    os.replace(path + ".tmp", path)
    print(f"check: {len(records)} steps recorded", flush=True)
    _wait_for_the_others(settings, dist.num_workers)
    sys.stderr.flush()
    # Done: what follows (evaluation, saving, the rest of the program) is not part of this run's check. Leave at
    # once, as a worker of a multi-worker job must, without waiting on TensorFlow's collective threads.
    os._exit(0)


def _wait_for_the_others(settings: CheckSettings, workers: int, limit: float = 120.0) -> None:
    """Every worker's record written means every worker is past its last step. A worker that left before
    then could take with it a collective's last message to a peer still receiving it (the peer then fails
    with a lost worker). The hosts of a check all run on this machine, so their files are the barrier."""
    deadline = time.monotonic() + limit
    paths = [os.path.join(settings.directory, RECORD.format(index=i)) for i in range(workers)]
    while not all(os.path.exists(p) for p in paths) and time.monotonic() < deadline:
        time.sleep(0.05)
