"""smtrain_tf.fit under the tf.distribute strategies that Keras's fit runs under (default, Mirrored,
MultiWorkerMirrored): Keras's own `model.fit`, the loop a wrapped script's fit runs too.

The model trains as `model.fit` trains it: its own `train_step` and `test_step`, its compiled loss and metrics (a
loss and an optimizer given to smtrain_tf.fit are compiled in), every callback as Keras drives it, with Keras 3's
trainer repaired where it fails under several replicas (keras_support/keras_repairs.py). Around it,
smtrain_tf.fit gives it what the job needs:
- the data as user_data.py streams it (sharded, shuffled with the job's seed, repeated, at the global batch; an
  epoch of steps_per_epoch steps);
- gradient_accumulation_steps as the Keras 3 optimizer's own (k micro-batches per update, their gradients
  averaged: Keras 2 keeps smtrain's loop for it);
- checkpoints, NaN, progress lines and a resumed epoch's remainder (job_callbacks.py), smtrain's metric line
  (epoch_lines.py, the chief's), TensorBoard scalars;
- steps per call: the job's steps_per_execution made a divisor of the epoch's steps and of the checkpoint and
  progress intervals (Keras runs whole calls), 1 when a callback acts on every batch.
During `smtrain check` the call is the same, cut to the check's steps, the model's own steps recorded
(check/keras_steps.py), as the wrap's fit records them; checkpoints are off there.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable, List, Optional

import tensorflow as tf

from ..check import check_build, keras_steps
from ..check import settings as check_settings
from ..check.loss_terms import Place
from ..contract import mlflow_run
from ..contract.container import Contract
from ..distribute.choice import DEFAULT, PS
from ..distribute.distribution import Distribution, describe
from ..keras_support import iterator_release, keras_repairs, optimization
from ..keras_support import measures as measures_mod
from ..keras_support.keras_compat import keras
from . import epoch_lines, job_callbacks, metrics, steps_per_call, user_data
from .callbacks import wants_batches
from .checkpoints import Checkpointer, Progress, resume
from .summaries import numbered

# The wrap's patched Model.fit keeps Keras's own here: smtrain_tf.fit in a wrapped script calls Keras's fit, not
# the wrap's (which would scale the batch and print the metric line a second time).
KERAS_OWN_FIT = "_smtrain_keras_fit"


def applies(dist: Distribution, accumulation: int) -> bool:
    """Keras's fit is the loop, except under parameter server and Horovod/smddp (smtrain's loop, frozen there),
    and for Keras 2 with gradient accumulation (its optimizers accumulate nothing)."""
    if dist.library is not None or dist.kind == PS:
        return False
    return accumulation == 1 or keras_repairs.trainer_module() is not None


def own_step(model: Any) -> bool:
    """Whether the model's class has a train_step of its own (keras.io's customizing-fit form, a GAN)."""
    return type(model).train_step is not keras.Model.train_step


def has_own_call(model: Any) -> bool:
    """A model with no call() (a GAN over sub-models) is built in its first step, as Keras builds it."""
    return keras_repairs.trainer_module() is None or keras_repairs.has_own_call(model)


def _default_metrics(model: Any, loss: Any) -> List[Any]:
    """As the bundled program reports it: accuracy for a classification loss of one output (on logits: above 0)."""
    if loss is None or isinstance(loss, (list, tuple, dict)) or len(measures_mod.output_names(model)) > 1 \
            or not measures_mod.is_classification_loss(loss):
        return []
    if measures_mod.loss_name(loss) == "binary_crossentropy" and measures_mod.reads_logits(loss, False):
        return [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)]
    return ["accuracy"]


def _compile(model: Any, loss: Any, optimizer: Any, given: bool, accumulation: int) -> None:
    """Compile the model for Keras's fit: with the loss and optimizer given (the model's own compile settings
    kept), or as the script compiled it; the default accuracy added when it has no metric."""
    compiled = measures_mod.compiled(model)
    config = dict(getattr(getattr(model, "_compile_config", None), "config", None) or {})
    if isinstance(optimizer, str):
        optimizer = keras.optimizers.get(optimizer)
    inner = getattr(optimizer, "inner_optimizer", optimizer)  # a LossScaleOptimizer applies its inner one's
    if accumulation > 1:
        if getattr(inner, "gradient_accumulation_steps", None) not in (None, accumulation):
            raise ValueError(f"smtrain_tf.fit: gradient_accumulation_steps={accumulation}, but the optimizer "
                             f"accumulates {inner.gradient_accumulation_steps} steps of its own: give one of them")
        if getattr(inner, "built", False) and inner.gradient_accumulation_steps != accumulation:
            raise ValueError("smtrain_tf.fit: gradient_accumulation_steps needs an optimizer that has not trained "
                             "yet (or give the optimizer gradient_accumulation_steps= itself)")
        inner.gradient_accumulation_steps = accumulation
    extra = [] if compiled.get("metrics") else _default_metrics(model, loss)
    custom_compile = type(model).compile is not keras.Model.compile
    if not given and (not extra or custom_compile):
        return  # as the script compiled it (a distiller's own compile keeps its own arguments)
    if custom_compile:
        raise ValueError(f"smtrain_tf.fit: {type(model).__name__} has a compile() of its own: compile it as your "
                         "script does and call fit without loss= and optimizer=")
    keep = {name: config[name] for name in ("loss_weights", "weighted_metrics", "run_eagerly", "jit_compile")
            if config.get(name) is not None}
    model.compile(optimizer=optimizer, loss=loss, metrics=compiled.get("metrics") or extra, **keep)


def _steps_per_call(target: int, every: List[int], callbacks: List[Any]) -> int:
    if wants_batches(callbacks):  # Keras would call its batch hooks once per call, with the last step's logs
        return 1
    return steps_per_call.largest_divisor(math.gcd(*[n for n in every if n > 0]), target)


def _own_fit(model: Any) -> Callable[..., Any]:
    fit = type(model).fit
    return getattr(fit, KERAS_OWN_FIT, fit)


def script_place(filename: str, line: int) -> Optional[str]:
    """A line of the script's directory as the check names it (a script of the user's own, never a notebook)."""
    import os

    from ..check.places import code_place

    return code_place(filename, line, os.path.dirname(os.path.abspath(sys.argv[0])))


def fit(dist: Distribution, contract: Contract, model: Any, data: user_data.Source,
        held_out: Optional[user_data.Source], *, epochs: int, batch_size_per_replica: Optional[int],
        steps_per_epoch: Optional[int], loss: Any, optimizer: Any, given: bool, callbacks: List[Any],
        accumulation: int, shuffle_buffer: int, seed: int, checkpoint: bool, log_every_steps: int,
        initial_epoch: int, steps_per_execution: Optional[int], fit_call: int, location: str, place: Place,
        started_at: float, say: Callable[[str], None]) -> Any:
    """Train with Keras's fit; return its History. The arguments are smtrain_tf.fit's, checked by fit.py."""
    hp = contract.hp
    checking = check_settings.read()
    counted = user_data.training(data, dist, batch_size_per_replica=batch_size_per_replica,
                                 accumulation=accumulation, steps_per_epoch=steps_per_epoch,
                                 shuffle_buffer=shuffle_buffer, seed=seed)
    spe = counted.steps_per_epoch  # optimizer steps
    # Keras takes micro-batches, `accumulation` per optimizer step.
    stream = counted if accumulation == 1 else user_data.training(
        data, dist, batch_size_per_replica=batch_size_per_replica, accumulation=1,
        steps_per_epoch=spe * accumulation, shuffle_buffer=shuffle_buffer, seed=seed)
    validation = user_data.validation(held_out, dist, batch_size_per_replica)
    if dist.num_replicas > 1 or dist.kind != DEFAULT:
        keras_repairs.install()
    iterator_release.install()
    _compile(model, loss, optimizer, given, accumulation)

    checkpointer = None
    start = Progress(0, 0, 0)
    if checkpoint and checking is None:  # a check's two runs never resume from the other's checkpoints
        checkpointer = Checkpointer(numbered(contract.checkpoint_dir, fit_call), hp("keep_checkpoints"),
                                    kind=dist.kind, is_chief=dist.is_chief, worker_index=dist.worker_index,
                                    model=model, optimizer=model.optimizer)
        if has_own_call(model):  # a GAN's variables exist after its first step only: restarted from its start
            with dist.scope():
                model.optimizer.build(model.trainable_variables)
            start = resume(checkpointer, dist, model, model.optimizer, spe, say)
    if start.epoch < int(initial_epoch):  # as in Keras: the epochs before it count as done
        start = Progress(int(initial_epoch), 0, int(initial_epoch) * spe)

    # In micro-batches: the epoch, the intervals, a resumed epoch's remainder, a check's steps.
    every_m = [spe * accumulation, hp("checkpoint_every_steps") * accumulation, log_every_steps * accumulation,
               (spe - start.epoch_step) * accumulation if start.epoch_step else 0,
               min(spe * accumulation, checking.steps) if checking is not None else 0]
    per_call = _steps_per_call(int(steps_per_execution or hp("steps_per_execution")), every_m, callbacks)
    emit = say if dist.is_chief else (lambda line: None)
    own = [job_callbacks.make_callback(keras, start=start, steps_per_epoch=spe, accumulation=accumulation,
                                       checkpointer=checkpointer, checkpoint_every=hp("checkpoint_every_steps"),
                                       log_every=log_every_steps, fail_on_nan=hp("fail_on_nan"),
                                       global_batch=counted.global_batch, started_at=started_at, emit=emit)]
    listed = own + list(callbacks)
    if dist.is_chief:
        examples = counted.global_batch * spe if counted.global_batch else None
        listed.append(epoch_lines.make_callback(keras, say, contract.tensorboard_dir, started_at, examples))
    arguments = dict(x=stream.dataset, epochs=int(epochs), steps_per_epoch=spe * accumulation,
                     validation_data=validation, callbacks=listed, initial_epoch=start.epoch, verbose=0)

    recorder = None
    if checking is not None:
        # `smtrain check`: this same fit, cut to the check's steps, the model's own steps recorded.
        recorder = keras_steps.recorder_for(checking, dist, model, say, place)
        check_build.install(model)
        recorder.begin_call(location)
        arguments.update(epochs=start.epoch + 1, steps_per_epoch=min(spe * accumulation, checking.steps))
        if validation is not None:
            arguments["validation_steps"] = checking.steps

    batch = (f"batch_size_per_replica={batch_size_per_replica} global_batch_size="
             f"{batch_size_per_replica * dist.num_replicas} " if batch_size_per_replica else "batch_size=as_batched ")
    say(f"config {describe(dist)} {batch}gradient_accumulation_steps={accumulation} "
        f"effective_batch_size={counted.global_batch or 'as_batched'} steps_per_epoch={spe} epochs={epochs} "
        f"checkpoints={checkpointer.directory if checkpointer else 'off'} chief={dist.is_chief} "
        f"steps_per_execution={per_call} loop=keras_fit")
    if dist.is_chief:  # the job's MLflow run (if any): a later fit call adds no param the first logged
        mlflow_run.begin({"replicas": dist.num_replicas, "workers": dist.num_workers, "strategy": dist.kind,
                          "global_batch": counted.global_batch or "as batched",
                          "learning_rate": optimization.current_learning_rate(model.optimizer)}, say)
    restore = steps_per_call.apply(model, per_call) if steps_per_call.tunable(model) else (lambda: None)
    try:
        with dist.scope():
            history = _own_fit(model)(model, **arguments)
    finally:
        restore()
    if recorder is not None:
        recorder.end_call()
    metrics.say_weights(model, say)
    end = own[0].progress
    say(f"training finished epochs={end.epoch} steps={end.global_step} elapsed={time.time() - started_at:.1f}")
    return history


def build_if_needed(dist: Distribution, model: Any, data: tf.data.Dataset, batched: bool) -> None:
    """Build the model on one example's features where it has a call() (Keras builds the others in their step)."""
    if getattr(model, "built", False) or not has_own_call(model):
        return
    with dist.scope():
        model(user_data.sample_batch(data, batched), training=False)
