"""Keras's own fit, tuned: several training steps per tf.function call (Keras's steps_per_execution).

One step per call, as a script compiles by default, pays Python's dispatch around every step: on this
kind of small model that is most of the time (bench/throughput_bench.py: plain fit at about half a
hand-written loop's speed, the same fit with 20 steps per call at the loop's). The steps themselves are
the same ops on the same batches in the same order, so the weights do not change
(tests/entrypoint/test_wrap_tuning.py compares them).

Chosen so that nothing the script wrote changes its meaning:
- left as the script compiled it when it set steps_per_execution itself, runs eagerly, or is Keras 2;
- 1 under MirroredStrategy with several replicas, where Keras 3's multi-step function fails at its first
  call ("You must feed a value for placeholder tensor", keras-team/keras#19246, open; seen here with
  Keras 3.15 on 2 CPU replicas); one replica, the default strategy and MultiWorkerMirrored (smtrain's
  loop, mwms_fit.py) are tuned;
- 1 while a callback of the call has train-batch hooks that act (training/callbacks.wants_batches: a
  ModelCheckpoint saving every n batches, the script's own on_train_batch_end): Keras would call them
  once per call, with the last step's logs;
- else the job's steps_per_execution (hyperparameter, default 20), made a divisor of steps_per_epoch and
  validation_steps when the call gives them: Keras runs whole calls, so an epoch of 150 steps in calls
  of 20 would train 160; and a divisor of the epoch's batches when one is near, so the progress bar
  ends on the epoch's count.
Keras's array input already shuffles indices and gathers each batch in parallel (its ArrayDataAdapter);
a prefetch after it measured no gain here, so the data path is Keras's. XLA is Keras's "auto": off on CPU.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

from ..distribute.choice import MIRRORED
from ..training.callbacks import wants_batches
from . import fit_inputs
from .context import WrapContext


def _batches_per_epoch(given: Dict[str, Any]) -> Optional[int]:
    """The epoch's batches when fit batches array data itself (None for data the script batched)."""
    if fit_inputs.batched_by_script(given.get("x")) is not None:
        return None
    rows = fit_inputs.num_examples(given.get("x"))
    if rows is None:
        return None
    kept = int(math.floor(rows * (1.0 - float(given.get("validation_split") or 0.0))))  # Keras's split
    return max(math.ceil(kept / int(given.get("batch_size") or fit_inputs.KERAS_DEFAULT_BATCH)), 1)


def _largest_divisor(count: int, at_most: int) -> int:
    return max(d for d in range(1, min(count, at_most) + 1) if count % d == 0)


def choose(target: int, given: Dict[str, Any]) -> int:
    """Steps per call for this fit call (its arguments with the global batch size): see the module's docstring."""
    whole_calls = [int(given[name]) for name in ("steps_per_epoch", "validation_steps") if given.get(name)]
    if whole_calls:
        return _largest_divisor(math.gcd(*whole_calls), target)
    batches = _batches_per_epoch(given)
    if batches is None:
        return target  # the data ends the epoch: Keras's last call of it stops there
    tidy = _largest_divisor(batches, target)
    return tidy if tidy * 2 >= min(target, batches) else target


def _callback_names(callbacks: Any) -> str:
    names = sorted({type(c).__name__ for c in callbacks if wants_batches([c])})
    return ", ".join(names)


def _set(model: Any, steps: int) -> None:
    if model.steps_per_execution != steps:
        model.steps_per_execution = steps
        # Keras builds these with the count in them; the next call makes them again.
        model.train_function = model.test_function = model.predict_function = None


def tune(ctx: WrapContext, model: Any, given: Dict[str, Any], location: str) -> None:
    """Set the model's steps_per_execution for this call (`given` has the global batch size); say so once."""
    if not ctx.settings.tuning or not isinstance(getattr(model, "steps_per_execution", None), int):
        return  # turned off, or Keras 2 (tf_keras keeps it in a variable of its own)
    if getattr(model, "_smtrain_tuned", None) != model.steps_per_execution and model.steps_per_execution != 1:
        ctx.say_once(f"wrap: {location}: fit runs {model.steps_per_execution} steps per call, as the script "
                     "compiled it")
        return
    if getattr(model, "run_eagerly", False):
        return
    if ctx.kind == MIRRORED and ctx.replicas > 1:
        ctx.say_once(f"wrap: note: {location}: fit runs one step per call: Keras 3's fit fails with several steps "
                     "per call under MirroredStrategy with several replicas (keras-team/keras#19246)")
        return
    callbacks = given.get("callbacks")
    listed = list(callbacks) if isinstance(callbacks, (list, tuple)) else []
    if wants_batches(listed) or (callbacks is not None and not isinstance(callbacks, (list, tuple))):
        _set(model, 1)
        model._smtrain_tuned = 1  # noqa: SLF001 - ours, to tell our setting from the script's
        which = _callback_names(listed) or type(callbacks).__name__
        ctx.say_once(f"wrap: {location}: fit runs one step per call: {which} acts on every batch "
                     "(Keras would call it once per call of several steps)")
        return
    steps = choose(int(ctx.contract.hp("steps_per_execution")), given)
    _set(model, steps)
    model._smtrain_tuned = steps  # noqa: SLF001
    if steps > 1:
        ctx.say_once(f"wrap: {location}: Keras fit tuned: {steps} steps per tf.function call "
                     "(steps_per_execution; the same steps, weights and callbacks per epoch; code.wrap_tuning: "
                     "false leaves fit as written)")
