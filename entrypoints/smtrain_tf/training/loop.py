"""The epoch loop: chunks of steps, checkpoints on their cadence, evaluation and one metric line per epoch."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

import numpy as np
import tensorflow as tf

from ..check import refusal
from ..check import settings as check_settings
from ..contract import mlflow_run
from ..contract.errors import NonFiniteLoss
from ..distribute.choice import HOROVOD, PS, SMDDP
from ..distribute.distribution import Distribution
from ..keras_support.measures import COUNT
from ..keras_support.optimization import current_learning_rate
from . import metrics
from .checkpoints import Checkpointer, Progress
from .runners import evaluate
from .steps import StepFunctions
from .summaries import Summaries


@dataclass(frozen=True)
class LoopConfig:
    epochs: int
    steps_per_epoch: int
    steps_per_execution: int
    checkpoint_every_steps: int
    log_every_steps: int
    # Examples per optimizer step over the job (micro-batches included), for the rates; 0 when the
    # batches are the user's: the examples counted are used instead.
    global_batch: int
    fail_on_nan: bool
    fit_call: int = 1  # the process's n-th fit call: its metric lines say so from the second on


class EpochHooks:
    """What a caller may do around each epoch, and each step when `batches` (smtrain_tf.fit drives Keras
    callbacks through it)."""

    # True: the loop runs one step per call and reports each (batch_begin / batch_end); callbacks with
    # batch hooks need it, at the cost of a call per step.
    batches = False

    def batch_begin(self, step: int) -> None:
        """`step`: the 0-based index of the step about to run, within its epoch."""

    def batch_end(self, step: int, logs: Dict[str, float]) -> None:
        """After the step; `logs` are the epoch's running values, as Keras passes them."""

    def epoch_begin(self, epoch: int) -> None:
        """`epoch`: the 0-based index of the epoch about to run."""

    def epoch_end(self, epoch: int, logs: Dict[str, float]) -> bool:
        """After the epoch's metric line and checkpoint; True stops the training."""
        return False

    def stopped(self) -> bool:
        """Whether a batch hook asked to stop (Keras: model.stop_training); the epoch then ends there."""
        return False


def _next_chunk(cfg: LoopConfig, progress: Progress) -> int:
    """Steps to run next: up to steps_per_execution, stopping at epoch ends, checkpoints and log lines."""
    n = min(cfg.steps_per_execution, cfg.steps_per_epoch - progress.epoch_step)
    for every in (cfg.checkpoint_every_steps, cfg.log_every_steps):
        if every > 0:
            n = min(n, every - progress.global_step % every)
    return max(n, 1)


def _check_finite(cfg: LoopConfig, totals: np.ndarray, progress: Progress) -> None:
    if cfg.fail_on_nan and not math.isfinite(float(totals[0])):
        raise NonFiniteLoss(f"training stopped: the loss became {'NaN' if math.isnan(totals[0]) else 'infinite'} "
                            f"at epoch {progress.epoch + 1} step {progress.global_step} (try a lower learning_rate, "
                            "warmup_epochs, or check the data for bad values)")


@dataclass
class LoopResult:
    progress: Progress
    last_metrics: Dict[str, str] = field(default_factory=dict)


def _logs(train: Dict[str, float], validation: Optional[Dict[str, float]]) -> Dict[str, float]:
    """Keras's epoch logs: the train values, then the validation ones with `val_`."""
    logs = dict(train)
    if validation is not None:
        logs.update({f"val_{name}": value for name, value in validation.items()})
    return logs


def _rate(cfg: LoopConfig, steps_done: int, totals: np.ndarray, seconds: float) -> float:
    examples = steps_done * cfg.global_batch if cfg.global_batch else float(totals[COUNT])
    return examples / max(seconds, 1e-9)


def _save(checkpointer: Optional[Checkpointer], progress: Progress, emit: Callable[[str], None]) -> None:
    path = checkpointer.save(progress) if checkpointer is not None else None
    if path:
        emit(f"checkpoint saved {path} epoch={progress.epoch} step={progress.global_step}")


def _why_not_checked(kind: str) -> str:
    """`smtrain check` records the steps inside Keras's own fit; this loop runs only where Keras's does not."""
    if kind == PS:
        return "a parameter-server job trains on workers the chief only schedules: its steps cannot be compared one by one"
    if kind in (HOROVOD, SMDDP):
        return f"strategy {kind} is not checked yet (tf.distribute strategies are)"
    return ("gradient_accumulation_steps under Keras 2 trains in smtrain's own loop (Keras 2's optimizers accumulate "
            "nothing), which a check does not record: check it with gradient_accumulation_steps=1 (the layout, batches "
            "and rate rules are the same), or train on Keras 3 (TensorFlow 2.16+), whose optimizer accumulates in "
            "Keras's own fit")


def train(cfg: LoopConfig, *, dist: Distribution, runner: Any, steps: StepFunctions,
          checkpointer: Optional[Checkpointer], validation: Optional[tf.data.Dataset], start: Progress,
          started_at: float, heartbeat: Callable[[], None], emit: Callable[[str], None],
          hooks: Optional[EpochHooks] = None, summaries: Optional[Summaries] = None) -> LoopResult:
    """Train from `start` to the end of the last epoch (or until a hook stops it); return where it ended
    and its last metrics. Without a checkpointer nothing is saved; with `summaries` (the chief's) each
    epoch's values are also written for TensorBoard."""
    checking = check_settings.read()
    if checking is not None:
        refusal.refuse(checking, _why_not_checked(dist.kind))
    hooks = hooks or EpochHooks()
    measures = steps.measures
    progress = start
    last: Dict[str, str] = {}
    while progress.epoch < cfg.epochs:
        hooks.epoch_begin(progress.epoch)
        epoch_totals = np.zeros(measures.size)
        train_seconds = 0.0
        steps_this_epoch = 0
        while progress.epoch_step < cfg.steps_per_epoch:
            n = 1 if hooks.batches else _next_chunk(cfg, progress)
            if hooks.batches:
                hooks.batch_begin(progress.epoch_step)
            began = time.perf_counter()
            epoch_totals += runner.run(n)
            train_seconds += time.perf_counter() - began
            steps_this_epoch += n
            progress = Progress(progress.epoch, progress.epoch_step + n, progress.global_step + n)
            _check_finite(cfg, epoch_totals, progress)
            heartbeat()
            if hooks.batches:
                # Every step's own values: the parameter-server runner hands back results as they finish.
                epoch_totals += runner.drain()
                hooks.batch_end(progress.epoch_step - 1, measures.values(epoch_totals))
                if hooks.stopped():
                    break
            at_epoch_end = progress.epoch_step >= cfg.steps_per_epoch
            if cfg.checkpoint_every_steps and progress.global_step % cfg.checkpoint_every_steps == 0 \
                    and not at_epoch_end:
                epoch_totals += runner.drain()
                _check_finite(cfg, epoch_totals, progress)
                _save(checkpointer, progress, emit)
                heartbeat()
            if cfg.log_every_steps and progress.global_step % cfg.log_every_steps == 0 and not at_epoch_end:
                rate = _rate(cfg, steps_this_epoch, epoch_totals, train_seconds)
                emit(metrics.progress_line(progress.epoch + 1, progress.global_step, measures.values(epoch_totals),
                                           rate, time.time() - started_at))
        began = time.perf_counter()
        epoch_totals += runner.drain()
        train_seconds += time.perf_counter() - began
        _check_finite(cfg, epoch_totals, progress)
        progress = Progress(progress.epoch + 1, 0, progress.global_step)
        val_totals = evaluate(dist, steps, validation) if validation is not None else None
        heartbeat()
        rate = _rate(cfg, steps_this_epoch, epoch_totals, train_seconds)
        train_values = measures.values(epoch_totals)
        val_values = measures.values(val_totals) if val_totals is not None else None
        learning_rate = current_learning_rate(steps.optimizer)
        line = metrics.epoch_line(progress.epoch, progress.global_step, train_values, val_values, learning_rate,
                                  rate, time.time() - started_at, cfg.fit_call)
        last = metrics.fields(line)
        emit(line)
        if dist.is_chief:
            mlflow_run.epoch(last, cfg.fit_call)
        if summaries is not None:
            summaries.epoch(progress.epoch - 1, train_values, val_values, learning_rate, rate)
        _save(checkpointer, progress, emit)
        heartbeat()
        if hooks.epoch_end(progress.epoch - 1, _logs(train_values, val_values)):
            break
    return LoopResult(progress, last)
