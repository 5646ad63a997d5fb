"""smtrain_tf.fit: a user's Keras model trained under the job's strategy; its arguments checked here.

Under the default, Mirrored and MultiWorkerMirrored strategies the loop is Keras's own fit (fit_keras.py),
the model's own train_step included. Under parameter server and Horovod/smddp, where Keras's fit has no loop
for the strategy, and for Keras 2 with gradient accumulation, it is the bundled entrypoint's (steps, runners,
the epoch loop, checkpoints and resume, metric lines with the model's compiled metrics, TensorBoard scalars),
fed with the user's model, loss, optimizer and data. The n-th call in a process keeps its checkpoints and
scalars apart (<dir>/fit-<n> from the second on), so a script that fits twice resumes each phase from its own
checkpoints.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence, Tuple

import tensorflow as tf

from ..check import settings as check_settings
from ..check.loss_terms import Place
from ..contract import failure, known_failures, mlflow_run
from ..contract.container import Contract
from ..distribute.choice import DEFAULT, PS
from ..distribute.distribution import Distribution, describe
from ..keras_support import measures as measures_mod
from ..keras_support import optimization
from ..keras_support.keras_compat import build_optimizer, keras
from ..keras_support.measures import Measures
from . import callbacks as callback_support
from . import fit_keras, keras_loop, metrics, user_data
from .checkpoints import Checkpointer, Progress, resume
from .loop import LoopConfig, train
from .runners import CoordinatorRunner, InProcessRunner
from .steps import StepFunctions
from .summaries import Summaries
from .summaries import numbered as _numbered

_calls = 0  # fit calls in this process, for their checkpoint directories


def _measures(model: Any, loss: Any) -> Measures:
    """The loss (given, else compiled) and the compiled metrics; Keras's default reads probabilities."""
    compiled = measures_mod.compiled(model)
    try:
        return Measures(model, loss, compiled.get("metrics"), compiled.get("loss_weights"), from_logits=False)
    except ValueError as exc:
        raise ValueError(f"smtrain_tf.fit: {exc}") from None


def _check_variables_in_scope(dist: Distribution, model: Any) -> None:
    if dist.library is not None or dist.kind == DEFAULT:
        return
    for variable in model.trainable_variables[:1]:
        raw = getattr(variable, "_value", variable)  # Keras 3 wraps the tf.Variable
        try:
            inside = dist.strategy.extended.variable_created_in_scope(raw)
        except (TypeError, ValueError, AttributeError):
            return
        if not inside:
            raise ValueError(f"smtrain_tf.fit: the model's variables were not created under the job's strategy "
                             f"({dist.kind}): build and compile the model inside `with smtrain_tf.strategy().scope():`")


def _required(model: Any, loss: Any, optimizer: Any, needs_loss: bool) -> Tuple[Any, Any]:
    """The loss and optimizer given, else compiled; a ValueError naming what is missing (a model with a
    train_step of its own computes its loss itself)."""
    loss = loss if loss is not None else getattr(model, "loss", None)
    optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
    missing = [name for name, value in (("loss", loss), ("optimizer", optimizer))
               if value is None and (needs_loss or name == "optimizer")]
    if missing:
        named = " and ".join({"loss": "a loss", "optimizer": "an optimizer"}[m] for m in missing)
        raise ValueError(f"smtrain_tf.fit needs {named}: compile the model first "
                         "(model.compile(optimizer=..., loss=...)) or pass " + " and ".join(f"{m}=..." for m in missing))
    return loss, optimizer


def _prepare_model(dist: Distribution, model: Any, loss: Any, optimizer: Any, data: tf.data.Dataset,
                   batched: bool) -> Tuple[Any, Any]:
    """Build the model if needed and check its variables; return the loss and the optimizer, built in the scope."""
    loss, optimizer = _required(model, loss, optimizer, needs_loss=True)
    with dist.scope():
        if not getattr(model, "built", False):
            model(user_data.sample_batch(data, batched), training=False)
    _check_variables_in_scope(dist, model)
    with dist.scope():
        if isinstance(optimizer, str):
            optimizer = keras.optimizers.get(optimizer)
        mixed = keras.mixed_precision.global_policy().name == "mixed_float16"
        optimizer = optimization.with_loss_scaling(optimizer, mixed)
        build_optimizer(optimizer, model.trainable_variables)
    return loss, optimizer


def fit(dist: Distribution, contract: Contract, model: Any, train_data: Any, validation_data: Any = None, *,
        epochs: int = 1, batch_size_per_replica: Optional[int] = None, steps_per_epoch: Optional[int] = None,
        loss: Any = None, optimizer: Any = None, callbacks: Optional[Sequence[Any]] = None,
        gradient_accumulation_steps: Optional[int] = None, shuffle_buffer: int = 0, seed: Optional[int] = None,
        checkpoint: bool = True, log_every_steps: int = 0, initial_epoch: int = 0,
        steps_per_execution: Optional[int] = None, say: Callable[[str], None], location: str = "",
        place: Optional[Place] = None) -> Any:
    """Train; write the failure file for a known failure and raise it again. See smtrain_tf.fit.
    `location`: the script's line of the call; `place`: how a check names a line of the job's code."""
    try:
        return _fit(dist, contract, model, train_data, validation_data, epochs=epochs,
                    batch_size_per_replica=batch_size_per_replica, steps_per_epoch=steps_per_epoch, loss=loss,
                    optimizer=optimizer, callbacks=callbacks, gradient_accumulation_steps=gradient_accumulation_steps,
                    shuffle_buffer=shuffle_buffer, seed=seed, checkpoint=checkpoint, log_every_steps=log_every_steps,
                    initial_epoch=initial_epoch, steps_per_execution=steps_per_execution, say=say,
                    location=location, place=place or fit_keras.script_place)
    except Exception as exc:
        known = known_failures.recognise(exc)
        if known is not None:
            failure.report(known.reason)
        raise


def _fit(dist: Distribution, contract: Contract, model: Any, train_data: Any, validation_data: Any, *,
         epochs: int, batch_size_per_replica: Optional[int], steps_per_epoch: Optional[int], loss: Any,
         optimizer: Any, callbacks: Optional[Sequence[Any]], gradient_accumulation_steps: Optional[int],
         shuffle_buffer: int, seed: Optional[int], checkpoint: bool, log_every_steps: int, initial_epoch: int,
         steps_per_execution: Optional[int], say: Callable[[str], None], location: str, place: Place) -> Any:
    global _calls
    started_at = time.time()
    hp = contract.hp
    if int(epochs) < 1:
        raise ValueError(f"smtrain_tf.fit: epochs must be at least 1, got {epochs}")
    if steps_per_execution is not None and int(steps_per_execution) < 1:
        raise ValueError(f"smtrain_tf.fit: steps_per_execution must be at least 1, got {steps_per_execution}")
    if int(initial_epoch) < 0:
        raise ValueError(f"smtrain_tf.fit: initial_epoch must be at least 0, got {initial_epoch}")
    accumulation = int(hp("gradient_accumulation_steps") if gradient_accumulation_steps is None
                       else gradient_accumulation_steps)
    if accumulation < 1:
        raise ValueError(f"smtrain_tf.fit: gradient_accumulation_steps must be at least 1, got {accumulation}")
    given_callbacks = callback_support.check(callbacks)
    if batch_size_per_replica is not None:
        # A check's one-device run stands for the planned replicas: it takes all their examples.
        batch_size_per_replica = int(batch_size_per_replica) * check_settings.stands_for()
    data = user_data.as_dataset(train_data, "train", batch_size_per_replica)
    held_out = (user_data.as_dataset(validation_data, "validation", batch_size_per_replica)
                if validation_data is not None else None)
    batched = batch_size_per_replica is None
    if isinstance(train_data, tf.data.Dataset):
        user_data.warn_if_not_split_by_file(data, dist, "training", say)
    seed = hp("seed") if seed is None else seed
    if keras_loop.applies(dist, accumulation):
        given = loss is not None or optimizer is not None
        loss, optimizer = _required(model, loss, optimizer, needs_loss=not keras_loop.own_step(model))
        fit_keras.build_if_needed(dist, model, data.dataset, batched)
        _check_variables_in_scope(dist, model)
        _calls += 1
        return fit_keras.fit(dist, contract, model, data, held_out, epochs=int(epochs),
                             batch_size_per_replica=batch_size_per_replica, steps_per_epoch=steps_per_epoch,
                             loss=loss, optimizer=optimizer, given=given, callbacks=given_callbacks,
                             accumulation=accumulation, shuffle_buffer=shuffle_buffer, seed=seed,
                             checkpoint=checkpoint, log_every_steps=log_every_steps or hp("log_every_steps"),
                             initial_epoch=int(initial_epoch), steps_per_execution=steps_per_execution,
                             fit_call=_calls, location=location, place=place, started_at=started_at, say=say)
    loss, optimizer = _prepare_model(dist, model, loss, optimizer, data.dataset, batched)

    stream = user_data.training(data, dist, batch_size_per_replica=batch_size_per_replica, accumulation=accumulation,
                                steps_per_epoch=steps_per_epoch, shuffle_buffer=shuffle_buffer, seed=seed)
    validation = user_data.validation(held_out, dist, batch_size_per_replica)
    steps = StepFunctions(dist, model, optimizer, _measures(model, loss), stream.micro_batch, hp("xla"),
                          accumulation)
    _calls += 1
    checkpointer = None
    start = Progress(0, 0, 0)
    if checkpoint:
        checkpointer = Checkpointer(_numbered(contract.checkpoint_dir, _calls), hp("keep_checkpoints"), kind=dist.kind,
                                    is_chief=dist.is_chief, worker_index=dist.worker_index, model=model,
                                    optimizer=optimizer)
        start = resume(checkpointer, dist, model, optimizer, stream.steps_per_epoch, say)
    if start.epoch < int(initial_epoch):  # at or past `epochs` nothing trains, as in Keras
        # As Keras's fit: the epochs before it count as done (for the epoch numbers and the callbacks).
        start = Progress(int(initial_epoch), 0, int(initial_epoch) * stream.steps_per_epoch)
    if dist.kind == PS:
        assert stream.dataset_fn is not None
        runner: Any = CoordinatorRunner(dist, steps, stream.dataset_fn)
    else:
        runner = InProcessRunner(dist, steps, stream.dataset)

    hooks = callback_support.CallbackHooks(given_callbacks, model, int(epochs), stream.steps_per_epoch)
    config = LoopConfig(epochs=int(epochs), steps_per_epoch=stream.steps_per_epoch,
                        steps_per_execution=int(steps_per_execution or hp("steps_per_execution")),
                        checkpoint_every_steps=hp("checkpoint_every_steps"),
                        log_every_steps=log_every_steps or hp("log_every_steps"), global_batch=stream.global_batch,
                        fail_on_nan=hp("fail_on_nan"), fit_call=_calls)
    batch = (f"batch_size_per_replica={batch_size_per_replica} global_batch_size="
             f"{batch_size_per_replica * dist.num_replicas} " if batch_size_per_replica else "batch_size=as_batched ")
    say(f"config {describe(dist)} {batch}gradient_accumulation_steps={accumulation} "
        f"effective_batch_size={stream.global_batch or 'as_batched'} steps_per_epoch={stream.steps_per_epoch} "
        f"epochs={epochs} checkpoints={checkpointer.directory if checkpointer else 'off'} chief={dist.is_chief} "
        f"steps_per_execution={1 if hooks.batches else config.steps_per_execution}")
    emit = say if dist.is_chief else (lambda line: None)
    if dist.is_chief:  # the job's MLflow run (if any): a later fit call adds no param the first logged
        mlflow_run.begin({"replicas": dist.num_replicas, "workers": dist.num_workers, "strategy": dist.kind,
                          "global_batch": stream.global_batch or "as batched",
                          "learning_rate": optimization.current_learning_rate(optimizer)}, say)
    summaries = (Summaries(_numbered(contract.tensorboard_dir, _calls))
                 if dist.is_chief and contract.tensorboard_dir else None)
    hooks.train_begin()
    restored = getattr(model, "_initial_epoch", None)  # Keras's BackupAndRestore sets it in on_train_begin
    if isinstance(restored, int) and start.epoch < restored < int(epochs):
        say(f"resumed at epoch {restored + 1} (BackupAndRestore restored the model)")
        start = Progress(restored, 0, restored * stream.steps_per_epoch)
    try:
        result = train(config, dist=dist, runner=runner, steps=steps, checkpointer=checkpointer,
                       validation=validation, start=start, started_at=started_at, heartbeat=lambda: None, emit=emit,
                       hooks=hooks, summaries=summaries)
    finally:
        if summaries is not None:
            summaries.close()
    hooks.train_end()
    metrics.say_weights(model, say)
    end = result.progress
    say(f"training finished epochs={end.epoch} steps={end.global_step} elapsed={time.time() - started_at:.1f}")
    return hooks.history
