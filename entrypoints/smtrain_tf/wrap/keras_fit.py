"""The patched `Model.fit`: Keras's own fit under every strategy the wrap sets.

The batch sizes become global (batch_size.py), fit runs several steps per call (fit_tuning.py) and
a callback prints smtrain's metric line each epoch (epoch_lines.py). Under MultiWorkerMirrored and
several replicas Keras's trainer runs with keras_repairs.py's five repairs, and arrays whose epoch is whole
batches and calls are endless (endless_arrays.py); on every layout Keras's per-epoch iterators are deleted
off the training thread (iterator_release.py). During `smtrain check` the call is the same, cut to the check's
steps (check_rest.py), with the model's own train_step recorded (check/keras_steps.py).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import tensorflow as tf

from ..check import check_build, keras_steps
from ..check import settings as check_settings
from ..contract import mlflow_run
from ..training import epoch_lines
from ..training.keras_loop import KERAS_OWN_FIT
from . import batch_size, check_rest, fit_inputs, fit_tuning
from .context import WrapContext


def with_epoch_lines(keras: Any, ctx: WrapContext, callbacks: Any, examples: Optional[int]) -> Any:
    if not ctx.is_chief:
        return callbacks
    if callbacks is None or isinstance(callbacks, (list, tuple)):
        lines = epoch_lines.make_callback(keras, ctx.say, ctx.contract.tensorboard_dir, ctx.started_at, examples)
        return list(callbacks or []) + [lines]
    return callbacks  # a CallbackList the script built: left as it is


def patch(keras: Any, model_class: Any, ctx: WrapContext) -> None:
    original: Callable[..., Any] = model_class.fit

    @functools.wraps(original)
    def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        given = fit_inputs.bind(original, self, args, kwargs)
        location = fit_inputs.caller_location(1, ctx.settings.script_dir)
        checking = check_settings.read()
        recorder = None
        if checking is not None:
            # `smtrain check`: this same fit, cut to the check's steps, the model's own steps recorded.
            if isinstance(given.get("x"), tf.data.Dataset):  # the script's batches, as the planned run's
                given["x"] = batch_size.as_planned_batches(ctx, given["x"])
            place = functools.partial(fit_inputs.script_place, script_dir=ctx.settings.script_dir)
            recorder = keras_steps.recorder_for(checking, ctx.dist, self, ctx.say, place)
            check_build.install(self)  # one device builds the model before its first step, as the planned run does
            recorder.begin_call(location)
        given, examples = batch_size.scale_batches(ctx, given, location)
        if checking is not None:
            given = check_rest.cut(given, checking.steps)  # at the global batch, which sets the epoch's steps
        if ctx.is_chief:  # the job's MLflow run (if any) keeps the first fit's
            mlflow_run.log_params({"global_batch": given.get("batch_size") or "as the script batched"})
        accumulation = ctx.contract.hp("gradient_accumulation_steps")
        if accumulation > 1:
            ctx.say_once(f"wrap: note: {location}: gradient_accumulation_steps={accumulation} is not applied: "
                         f"Keras's own fit (strategy {ctx.kind}) makes one optimizer step per batch; give the "
                         "script's Keras 3 optimizer gradient_accumulation_steps= (or train with smtrain_tf.fit)")
        restore = fit_tuning.tune(ctx, self, given, location)  # before the wrap's own callback joins the script's
        given["callbacks"] = with_epoch_lines(keras, ctx, given.get("callbacks"), examples)
        try:
            history = original(self, **given)
        finally:
            restore()
        if recorder is not None:
            recorder.end_call()
        return history

    setattr(fit, KERAS_OWN_FIT, original)  # smtrain_tf.fit calls Keras's own
    model_class.fit = fit
