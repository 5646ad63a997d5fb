"""smtrain_tf.fit through Keras's own fit (keras_loop.py): the user's data as streams, the model compiled with what
fit was given, its `config` line, the weights digest at the end."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, List, Optional

import tensorflow as tf

from ..check.loss_terms import Place
from ..check.places import code_place
from ..contract import mlflow_run
from ..contract.container import Contract
from ..distribute.distribution import Distribution, describe
from ..keras_support import measures as measures_mod
from ..keras_support import optimization
from ..keras_support.keras_compat import keras
from . import keras_loop, metrics, user_data
from .summaries import numbered


def script_place(filename: str, line: int) -> Optional[str]:
    """A line of the script's directory as the check names it (a script of the user's own, never a notebook)."""
    return code_place(filename, line, os.path.dirname(os.path.abspath(sys.argv[0])))


def build_if_needed(dist: Distribution, model: Any, data: tf.data.Dataset, batched: bool) -> None:
    """Build the model on one example's features where it has a call() (Keras builds the others in their step)."""
    if getattr(model, "built", False) or not keras_loop.has_own_call(model):
        return
    with dist.scope():
        model(user_data.sample_batch(data, batched), training=False)


def _compile(dist: Distribution, model: Any, loss: Any, optimizer: Any, given: bool, accumulation: int) -> None:
    """Compile the model for Keras's fit: with the loss and optimizer given (the model's own compile settings
    kept), or as the script compiled it; the default accuracy added when it has no metric."""
    compiled = measures_mod.compiled(model)
    config = dict(getattr(getattr(model, "_compile_config", None), "config", None) or {})
    if isinstance(optimizer, str):
        optimizer = keras.optimizers.get(optimizer)
    try:
        keras_loop.accumulate(optimizer, accumulation)
    except ValueError as exc:
        raise ValueError(f"smtrain_tf.fit: {exc}") from None
    extra = [] if compiled.get("metrics") else keras_loop.default_metrics(model, loss)
    custom_compile = type(model).compile is not keras.Model.compile
    if not given and (not extra or custom_compile):
        return  # as the script compiled it (a distiller's own compile keeps its own arguments)
    if custom_compile:
        raise ValueError(f"smtrain_tf.fit: {type(model).__name__} has a compile() of its own: compile it as your "
                         "script does and call fit without loss= and optimizer=")
    keep = {name: config[name] for name in ("loss_weights", "weighted_metrics", "run_eagerly", "jit_compile")
            if config.get(name) is not None}
    with dist.scope():  # the loss tracker compile makes: outside the scope each process would keep its own mean
        model.compile(optimizer=optimizer, loss=loss, metrics=compiled.get("metrics") or extra, **keep)


def fit(dist: Distribution, contract: Contract, model: Any, data: user_data.Source,
        held_out: Optional[user_data.Source], *, epochs: int, batch_size_per_replica: Optional[int],
        steps_per_epoch: Optional[int], loss: Any, optimizer: Any, given: bool, callbacks: List[Any],
        accumulation: int, shuffle_buffer: int, seed: int, checkpoint: bool, log_every_steps: int,
        initial_epoch: int, steps_per_execution: Optional[int], fit_call: int, location: str, place: Place,
        started_at: float, say: Callable[[str], None]) -> Any:
    """Train with Keras's fit; return its History. The arguments are smtrain_tf.fit's, checked by fit.py."""
    hp = contract.hp
    counted = user_data.training(data, dist, batch_size_per_replica=batch_size_per_replica,
                                 accumulation=accumulation, steps_per_epoch=steps_per_epoch,
                                 shuffle_buffer=shuffle_buffer, seed=seed)
    spe = counted.steps_per_epoch  # optimizer steps
    # Keras takes micro-batches, `accumulation` per optimizer step.
    stream = counted if accumulation == 1 else user_data.training(
        data, dist, batch_size_per_replica=batch_size_per_replica, accumulation=1,
        steps_per_epoch=spe * accumulation, shuffle_buffer=shuffle_buffer, seed=seed)
    validation = user_data.validation(held_out, dist, batch_size_per_replica)
    _compile(dist, model, loss, optimizer, given, accumulation)
    schedule = keras_loop.Schedule(
        epochs=epochs, steps_per_epoch=spe, accumulation=accumulation, global_batch=counted.global_batch,
        steps_per_execution=int(steps_per_execution or hp("steps_per_execution")),
        checkpoint_dir=numbered(contract.checkpoint_dir, fit_call) if checkpoint else None,
        log_every_steps=log_every_steps, initial_epoch=initial_epoch, fit_call=fit_call)
    prepared = keras_loop.prepare(dist, contract, model, schedule, callbacks, stream.dataset, say)
    batch = (f"batch_size_per_replica={batch_size_per_replica} global_batch_size="
             f"{batch_size_per_replica * dist.num_replicas} " if batch_size_per_replica else "batch_size=as_batched ")
    checkpointer = prepared.checkpointer
    say(f"config {describe(dist)} {batch}gradient_accumulation_steps={accumulation} "
        f"effective_batch_size={counted.global_batch or 'as_batched'} steps_per_epoch={spe} epochs={epochs} "
        f"checkpoints={checkpointer.directory if checkpointer else 'off'} chief={dist.is_chief} "
        f"steps_per_execution={prepared.steps_per_call} loop=keras_fit")
    if dist.is_chief:  # the job's MLflow run (if any): a later fit call adds no param the first logged
        mlflow_run.begin({"replicas": dist.num_replicas, "workers": dist.num_workers, "strategy": dist.kind,
                          "global_batch": counted.global_batch or "as batched",
                          "learning_rate": optimization.current_learning_rate(model.optimizer)}, say)
    trained = keras_loop.train(dist, contract, model, schedule, prepared, stream.dataset, validation, callbacks,
                               location=location, place=place, started_at=started_at, say=say)
    metrics.say_weights(model, say)
    end = trained.end
    say(f"training finished epochs={end.epoch} steps={end.global_step} elapsed={time.time() - started_at:.1f}")
    return trained.history
