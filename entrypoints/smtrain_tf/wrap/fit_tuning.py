"""Keras's own fit, tuned: several training steps per tf.function call (Keras's steps_per_execution).

One step per call, as a script compiles by default, pays Python's dispatch around every step: on this
kind of small model that is most of the time (bench/throughput_bench.py: plain fit at about half a
hand-written loop's speed, the same fit with 20 steps per call at the loop's). The steps themselves are
the same ops on the same batches in the same order, so the weights do not change
(tests/entrypoint/test_wrap_tuning.py compares them).

Chosen so that nothing the script wrote changes its meaning:
- left as the script compiled it when it set steps_per_execution itself, runs eagerly, or is Keras 2;
- tuned under every strategy the wrap sets: with several replicas, where Keras 3's own multi-step
  function fails (keras-team/keras#19246), keras_repairs.py runs the same steps in a loop of its own;
- 1 while a callback of the call acts on every batch: a train-batch hook (training/callbacks.wants_batches:
  a ModelCheckpoint saving every n batches, the script's own on_train_batch_end), or a test-batch hook
  when fit validates (Keras would call them once per call, with the last step's logs);
- else the job's steps_per_execution (hyperparameter, default 20), made a divisor of steps_per_epoch and
  validation_steps when the call gives them: Keras runs whole calls, so an epoch of 150 steps in calls
  of 20 would train 160; and a divisor of the epoch's batches when one is near, so the progress bar
  ends on the epoch's count.
The count holds for the fit call only (training/steps_per_call.py: afterwards the model has the script's
count and functions again; those traced for the count are kept for its next fit).
Keras's array input already shuffles indices and gathers each batch in parallel (its ArrayDataAdapter);
a prefetch after it measured no gain here, so the data path is Keras's. XLA is Keras's "auto": off on CPU.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List

from ..keras_support.keras_compat import keras
from ..training import steps_per_call
from ..training.callbacks import wants_batches
from ..training.steps_per_call import largest_divisor
from . import fit_inputs
from .context import WrapContext

_TEST_BATCH_HOOKS = ("on_test_batch_begin", "on_test_batch_end")


def choose(target: int, given: Dict[str, Any]) -> int:
    """Steps per call for this fit call (its arguments with the global batch size): see the module's docstring."""
    whole_calls = [int(given[name]) for name in ("steps_per_epoch", "validation_steps") if given.get(name)]
    if whole_calls:
        return largest_divisor(math.gcd(*whole_calls), target)
    batches = fit_inputs.array_batches_per_epoch(given)
    if batches is None:
        return target  # the data ends the epoch: Keras's last call of it stops there
    tidy = largest_divisor(batches, target)
    return tidy if tidy * 2 >= min(target, batches) else target


def _listed(callbacks: Any) -> List[Any]:
    """The call's callbacks, those inside a CallbackList the script built too."""
    if callbacks is None:
        return []
    inner = getattr(callbacks, "callbacks", None)
    return list(inner if isinstance(inner, (list, tuple)) else callbacks)


def _acts_on_test_batches(callback: Any) -> bool:
    base = keras.callbacks.Callback
    return any(getattr(type(callback), name, None) is not getattr(base, name, None) or name in vars(callback)
               for name in _TEST_BATCH_HOOKS)


def _every_batch(given: Dict[str, Any]) -> List[str]:
    """The callbacks of this call that act on every batch (train batches; test batches when fit validates)."""
    validates = given.get("validation_data") is not None or bool(given.get("validation_split"))
    return sorted({type(c).__name__ for c in _listed(given.get("callbacks"))
                   if wants_batches([c]) or (validates and _acts_on_test_batches(c))})


def _why_one(given: Dict[str, Any], target: int) -> str:
    named = ", ".join(f"{name}={given[name]}" for name in ("steps_per_epoch", "validation_steps") if given.get(name))
    return f"{named} has no divisor from 2 to {target} (Keras runs whole calls)"


def _nothing() -> None:
    return None


def tune(ctx: WrapContext, model: Any, given: Dict[str, Any], location: str) -> Callable[[], None]:
    """Set the model's steps_per_execution for this fit call (`given` has the global batch size) and say so once;
    return what puts the script's back when the call ends."""
    if not ctx.settings.tuning or not steps_per_call.tunable(model):
        return _nothing  # turned off, or Keras 2 (tf_keras keeps it in a variable of its own)
    if model.steps_per_execution != 1:
        ctx.say_once(f"wrap: {location}: fit runs {model.steps_per_execution} steps per call, as the script "
                     "compiled it")
        return _nothing
    if getattr(model, "run_eagerly", False):
        return _nothing
    acting = _every_batch(given)
    if acting:
        ctx.say_once(f"wrap: {location}: fit runs one step per call: {', '.join(acting)} acts on every batch "
                     "(Keras would call it once per call of several steps)")
        return _nothing
    target = int(ctx.contract.hp("steps_per_execution"))
    steps = choose(target, given)
    if steps == 1:
        ctx.say_once(f"wrap: {location}: fit runs one step per call: {_why_one(given, target)}")
        return _nothing
    ctx.say_once(f"wrap: {location}: Keras fit tuned: {steps} steps per tf.function call (steps_per_execution; "
                 "the same steps, weights and epoch callbacks; code.wrap_tuning: false leaves fit as written)")
    return steps_per_call.apply(model, steps)
