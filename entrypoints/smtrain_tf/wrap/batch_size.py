"""The batch a script writes for array data is one replica's (SMTRAIN_WRAP_BATCH=per_replica, the default).

Keras splits a global batch over the replicas, so the wrap gives it the script's batch times the
replicas: each replica then does the work it did on one device. With SMTRAIN_WRAP_BATCH=global the
number stays as written. Data the script batches itself (a tf.data.Dataset, a Sequence, a
generator) is left alone, with a warning naming the fit call. A batch the script multiplied by
num_replicas_in_sync itself (distribute/replica_count.py records it) is global, as written.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ..check import settings as check_settings
from ..distribute import replica_count
from . import fit_inputs
from .context import WrapContext, plural
from .settings import GLOBAL


def batched_data_warning(ctx: WrapContext, location: str, what: str) -> None:
    if replica_count.dataset_batch_scaled():
        ctx.say_once(f"wrap: {location}: fit gets {what}, which the script batches itself with a global batch (it "
                     f"multiplied by num_replicas_in_sync): each batch is split over {plural(ctx.replicas, 'replica')}")
        return
    if ctx.replicas > 1:
        # The number may already be global (a per-worker batch times the workers read from TF_CONFIG, as
        # TensorFlow's multi-worker tutorial writes it): the wrap cannot tell, so it says both.
        ctx.say_once(f"wrap: {location}: fit gets {what}, which the script batches itself; the wrap leaves it as it "
                     f"is, so each of its batches is the global batch, split over {ctx.replicas} replicas (if the "
                     f"script's batch size is one replica's, multiply it by strategy.num_replicas_in_sync; if it is "
                     "already the whole job's, nothing to do)")


def per_replica_batch(ctx: WrapContext, given: Dict[str, Any]) -> int:
    """The batch one replica takes from array data, as the script wrote it and the settings read it."""
    written = int(given.get("batch_size") or fit_inputs.KERAS_DEFAULT_BATCH)
    if replica_count.scaled_by_script(given.get("batch_size")):
        per_replica = max(written // ctx.replicas, 1)
        ctx.say_once(f"wrap: batch_size {written} is global (the script multiplied it by num_replicas_in_sync): "
                     f"{per_replica} per replica ({plural(ctx.replicas, 'replica')})")
        return per_replica
    if ctx.settings.batch == GLOBAL:
        per_replica = max(written // ctx.planned_replicas, 1)
        ctx.say_once(f"wrap: batch_size {written} is global (SMTRAIN_WRAP_BATCH=global): {per_replica} per replica "
                     f"({plural(ctx.planned_replicas, 'replica')})")
        return per_replica
    ctx.say_once(f"wrap: batch_size {written} per replica -> global {written * ctx.planned_replicas} "
                 f"({plural(ctx.planned_replicas, 'replica')})")
    return written


def scale_batches(ctx: WrapContext, given: Dict[str, Any], location: str) -> Tuple[Dict[str, Any], Optional[int]]:
    """Keras fit's arguments with global batch sizes, and the examples one epoch trains on (None if unknown)."""
    what = fit_inputs.batched_by_script(given.get("x"))
    if what is not None:
        batched_data_warning(ctx, location, what)
        return given, None
    given = dict(given)
    written_global = ctx.settings.batch == GLOBAL or replica_count.scaled_by_script(given.get("batch_size"))
    # The replicas the batch is for: in a check's one-device run, those it stands for.
    replicas = ctx.planned_replicas
    global_batch = per_replica_batch(ctx, given) * replicas
    if not written_global:
        given["batch_size"] = global_batch
        if given.get("validation_batch_size"):
            validation = int(given["validation_batch_size"])
            given["validation_batch_size"] = validation * replicas
            ctx.say_once(f"wrap: validation_batch_size {validation} per replica -> global "
                         f"{validation * replicas} ({plural(replicas, 'replica')})")
    if given.get("steps_per_epoch"):
        return given, int(given["steps_per_epoch"]) * global_batch
    rows = fit_inputs.num_examples(given.get("x"))
    if rows is None:
        return given, None
    return given, int(rows * (1.0 - float(given.get("validation_split") or 0.0)))


def as_planned_batches(ctx: WrapContext, dataset: Any) -> Any:
    """During a check, a dataset the script batches (check/rebatch.py); in the one-device run, its batches made
    the planned run's. The wrap leaves such a dataset as the script batched it, so the one device trains on the
    same batches: only a batch the script multiplied by num_replicas_in_sync (1 on one device, N in the planned
    run) becomes that times the replicas the device stands for."""
    if check_settings.read() is None:
        return dataset
    from ..check import rebatch

    size = rebatch.first_batch_size(dataset)  # in both runs: their shuffles stay in step
    times = ctx.planned_replicas // max(ctx.replicas, 1)
    if times <= 1 or not replica_count.dataset_batch_scaled():
        return dataset
    ctx.say_once(f"check: the script's batches of {size} taken {times} at a time: one device standing for "
                 f"{plural(ctx.planned_replicas, 'replica')}")
    return rebatch.as_planned(dataset, size, times)
