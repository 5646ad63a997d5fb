"""Keras's own `model.fit` as the job runs it: the loop of the bundled program (session.py) and of smtrain_tf.fit
(fit_keras.py) under the strategies Keras's fit runs under (default, Mirrored, MultiWorkerMirrored), as a wrapped
script's fit is the wrap's.

The model trains as `model.fit` trains it: its own `train_step` and `test_step`, its compiled loss and metrics,
every callback as Keras drives it, with Keras 3's trainer repaired where it fails under several replicas
(keras_support/keras_repairs.py). Around it, the job's own needs:
- gradient_accumulation_steps as the Keras 3 optimizer's own (k micro-batches per update, their gradients
  averaged; Keras 2 keeps smtrain's loop for it: `applies`);
- checkpoints restored before the call (prepare) and written, NaN, progress lines and a resumed epoch's remainder
  (job_callbacks.py), smtrain's metric line (epoch_lines.py, the chief's), TensorBoard scalars;
- steps per call: the job's steps_per_execution made a divisor of the epoch's steps and of the checkpoint and
  progress intervals (Keras runs whole calls), 1 when a callback acts on every batch.
During `smtrain check` the call is the same, cut to the check's steps, the model's own steps recorded
(check/keras_steps.py), as the wrap's fit records them; no checkpoint is restored there.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import tensorflow as tf

from ..check import check_build, keras_steps
from ..check import settings as check_settings
from ..check.loss_terms import Place
from ..contract.container import Contract
from ..distribute.choice import DEFAULT, PS
from ..distribute.distribution import Distribution
from ..keras_support import iterator_release, keras_repairs, several_steps
from ..keras_support import measures as measures_mod
from ..keras_support.keras_compat import keras
from . import epoch_lines, job_callbacks, steps_per_call
from .callbacks import wants_batches
from .checkpoints import Checkpointer, Progress, resume

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


def default_metrics(model: Any, loss: Any) -> List[Any]:
    """As smtrain's loop reports it: accuracy for a classification loss of one output (on logits: above 0)."""
    if loss is None or isinstance(loss, (list, tuple, dict)) or len(measures_mod.output_names(model)) > 1 \
            or not measures_mod.is_classification_loss(loss):
        return []
    if measures_mod.loss_name(loss) == "binary_crossentropy" and measures_mod.reads_logits(loss, False):
        return [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)]
    return ["accuracy"]


# Classification losses named by a string, as Keras's objects that can read logits.
_LOGIT_LOSSES = {"sparse_categorical_crossentropy": "SparseCategoricalCrossentropy",
                 "categorical_crossentropy": "CategoricalCrossentropy", "binary_crossentropy": "BinaryCrossentropy"}


def compile_loss(loss: Any, from_logits: bool) -> Any:
    """The bundled program's loss as compile takes it, reading what smtrain's loop reads: none is sparse
    categorical cross-entropy, and a cross-entropy named by a string reads logits when the model gives them
    (`from_logits`; a string alone would make Keras read probabilities). Per output for several (list, dict)."""
    if isinstance(loss, dict):  # several outputs: each loss reads probabilities unless it says (as measures.py)
        return {name: compile_loss(each, False) for name, each in loss.items()}
    if isinstance(loss, (list, tuple)):
        if len(loss) == 1:
            return compile_loss(loss[0], from_logits)
        return [compile_loss(each, False) for each in loss]
    name = measures_mod.loss_name(loss) if loss is None or isinstance(loss, str) else ""
    if name in _LOGIT_LOSSES:
        return getattr(keras.losses, _LOGIT_LOSSES[name])(from_logits=from_logits)
    return loss


def metric_names(metrics: Any) -> List[str]:
    """The names Keras's logs give compile's metrics (a string keeps its own; an object its name)."""
    return [m if isinstance(m, str) else str(getattr(m, "name", type(m).__name__)) for m in (metrics or [])]


def accumulate(optimizer: Any, accumulation: int) -> None:
    """The job's gradient_accumulation_steps as the Keras 3 optimizer's own, set before it is built."""
    if accumulation <= 1:
        return
    inner = getattr(optimizer, "inner_optimizer", optimizer)  # a LossScaleOptimizer applies its inner one's
    if getattr(inner, "gradient_accumulation_steps", None) not in (None, accumulation):
        raise ValueError(f"gradient_accumulation_steps={accumulation}, but the optimizer accumulates "
                         f"{inner.gradient_accumulation_steps} steps of its own: give one of them")
    if getattr(inner, "built", False) and inner.gradient_accumulation_steps != accumulation:
        raise ValueError("gradient_accumulation_steps needs an optimizer that has not trained yet (or give the "
                         "optimizer gradient_accumulation_steps= itself)")
    inner.gradient_accumulation_steps = accumulation


def _steps_per_call(target: int, every: List[int], callbacks: List[Any]) -> int:
    if wants_batches(callbacks):  # Keras would call its batch hooks once per call, with the last step's logs
        return 1
    return steps_per_call.largest_divisor(math.gcd(*[n for n in every if n > 0]), target)


def _own_fit(model: Any) -> Callable[..., Any]:
    fit = type(model).fit
    return getattr(fit, KERAS_OWN_FIT, fit)


@dataclass(frozen=True)
class Schedule:
    """One Keras fit call as the job runs it; steps are optimizer steps (Keras counts `accumulation` micro-batches
    for each)."""

    epochs: int
    steps_per_epoch: int
    accumulation: int
    global_batch: int  # examples per optimizer step over the job; 0 when the batches are the user's
    steps_per_execution: int  # wanted; made a divisor of the epoch and the intervals
    checkpoint_dir: Optional[str]  # None: no checkpoints
    log_every_steps: int = 0  # a progress line every N steps (0: none)
    initial_epoch: int = 0
    fit_call: int = 1  # the process's n-th fit call


@dataclass(frozen=True)
class Prepared:
    checkpointer: Optional[Checkpointer]
    start: Progress  # where training resumes
    steps_per_call: int


def _build_before_restore(dist: Distribution, model: Any, dataset: tf.data.Dataset) -> None:
    """Keras 3 builds the compiled loss's and metrics' variables at fit: built here first, from zeros shaped as the
    data, so that a restore finds them. A variable made later from a checkpoint's value is not broadcast by
    MultiWorkerMirrored (every worker is taken to restore alike), and a worker without the chief's checkpoint
    would wait for that broadcast for ever."""
    if keras_repairs.trainer_module() is None or not getattr(model, "compiled", False):
        return
    try:
        batch = keras_repairs.zeros_like_spec(dataset.element_spec)
    except (TypeError, ValueError):  # ragged or sparse data: Keras builds them at fit
        return
    with dist.scope():
        model._symbolic_build(data_batch=keras_repairs.with_labels(model, dist.strategy, batch))


def prepare(dist: Distribution, contract: Contract, model: Any, schedule: Schedule, callbacks: List[Any],
            dataset: tf.data.Dataset, say: Callable[[str], None]) -> Prepared:
    """After compile: Keras 3 repaired for the strategy, the newest checkpoint restored, the steps per call."""
    hp = contract.hp
    checking = check_settings.read()
    if dist.num_replicas > 1 or dist.kind != DEFAULT:
        keras_repairs.install()
    iterator_release.install()
    several_steps.install()  # the job's stream is endless: each call asks it nothing
    spe, k = schedule.steps_per_epoch, schedule.accumulation
    checkpointer = None
    start = Progress(0, 0, 0)
    if schedule.checkpoint_dir is not None and checking is None:  # a check's runs never resume from another's
        checkpointer = Checkpointer(schedule.checkpoint_dir, hp("keep_checkpoints"), kind=dist.kind,
                                    is_chief=dist.is_chief, worker_index=dist.worker_index, model=model,
                                    optimizer=model.optimizer)
        if has_own_call(model):  # a GAN's variables exist after its first step only: restarted from its start
            _build_before_restore(dist, model, dataset)
            with dist.scope():
                model.optimizer.build(model.trainable_variables)
            start = resume(checkpointer, dist, model, model.optimizer, spe, say)
    if start.epoch < schedule.initial_epoch:  # as in Keras: the epochs before it count as done
        start = Progress(schedule.initial_epoch, 0, schedule.initial_epoch * spe)
    # In micro-batches: the epoch, the intervals, a resumed epoch's remainder, a check's steps.
    every = [spe * k, hp("checkpoint_every_steps") * k, schedule.log_every_steps * k,
             (spe - start.epoch_step) * k if start.epoch_step else 0,
             min(spe * k, checking.steps) if checking is not None else 0]
    return Prepared(checkpointer, start, _steps_per_call(schedule.steps_per_execution, every, callbacks))


@dataclass(frozen=True)
class Trained:
    history: Any  # Keras's History
    end: Progress
    last_metrics: Dict[str, str]  # the last metric line's fields (the chief's; {} elsewhere)


def train(dist: Distribution, contract: Contract, model: Any, schedule: Schedule, prepared: Prepared,
          dataset: tf.data.Dataset, validation: Optional[tf.data.Dataset], callbacks: List[Any], *,
          location: str, place: Place, started_at: float, say: Callable[[str], None],
          heartbeat: Callable[[], None] = lambda: None) -> Trained:
    """Keras's fit on `dataset` (endless, at the global micro-batch), with the job's callbacks around the given."""
    hp = contract.hp
    checking = check_settings.read()
    spe, k = schedule.steps_per_epoch, schedule.accumulation
    emit = say if dist.is_chief else (lambda line: None)
    job = job_callbacks.make_callback(keras, start=prepared.start, steps_per_epoch=spe, accumulation=k,
                                      checkpointer=prepared.checkpointer,
                                      checkpoint_every=hp("checkpoint_every_steps"),
                                      log_every=schedule.log_every_steps, fail_on_nan=hp("fail_on_nan"),
                                      global_batch=schedule.global_batch, started_at=started_at, emit=emit,
                                      heartbeat=heartbeat)
    listed = [job, *callbacks]
    lines = None
    if dist.is_chief:
        examples = schedule.global_batch * spe if schedule.global_batch else None
        lines = epoch_lines.make_callback(keras, say, contract.tensorboard_dir, started_at, examples)
        listed.append(lines)
    # shuffle=False: the stream is shuffled already (Keras would warn that it ignores its default True).
    arguments = dict(x=dataset, epochs=schedule.epochs, steps_per_epoch=spe * k, validation_data=validation,
                     callbacks=listed, initial_epoch=prepared.start.epoch, verbose=0, shuffle=False)
    recorder = None
    if checking is not None:
        # `smtrain check`: this same fit, cut to the check's steps, the model's own steps recorded.
        recorder = keras_steps.recorder_for(checking, dist, model, say, place)
        check_build.install(model)
        recorder.begin_call(location)
        arguments.update(epochs=prepared.start.epoch + 1, steps_per_epoch=min(spe * k, checking.steps))
        if validation is not None:
            arguments["validation_steps"] = checking.steps
    restore = steps_per_call.apply(model, prepared.steps_per_call) if steps_per_call.tunable(model) \
        else (lambda: None)
    try:
        # Outside the strategy's scope, as a script calls fit (Keras keeps the strategy the model was built under):
        # what the callbacks make (a checkpoint's save counter) stays a plain variable of each process.
        with warnings.catch_warnings():
            # Keras warns "Your input ran out of data; interrupting training" each time it evaluates a dataset of
            # unknown length to its end (a CSV channel): the training stream never ends, so it says nothing true.
            warnings.filterwarnings("ignore", message="Your input ran out of data")
            history = _own_fit(model)(model, **arguments)
    finally:
        restore()
    if recorder is not None:
        recorder.end_call()
    return Trained(history, job.progress, dict(lines.last) if lines is not None else {})
