"""What the job needs around Keras's own fit (smtrain_tf.fit), as one Keras callback on every process.

- Checkpoints (model, optimizer, progress; checkpoints.py) at every epoch end and every
  `checkpoint_every_steps` optimizer steps: every process calls save (MultiWorkerMirrored reads variables
  through collectives), the chief alone writes into the checkpoint directory.
- A loss that is NaN or infinite ends the job (NonFiniteLoss, its FailureReason), as the bundled loop's does,
  when `fail_on_nan`: the logs are reduced over the job, so every process stops at the same call.
- `progress ...` lines every `log_every_steps` optimizer steps (the chief's).
- A job restarted mid-epoch (a spot interruption after a step checkpoint) runs only the remaining steps of
  that epoch: the callback ends it there (`stop_training` at the batch, cleared again at the epoch's end before
  any other callback sees it), and the later epochs are whole.

Keras counts micro-batches when the optimizer accumulates gradients (k of them per optimizer step); progress
here is counted in optimizer steps, as in the bundled loop's checkpoints and lines.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, Mapping, Optional

import numpy as np

from ..contract.errors import NonFiniteLoss
from . import metrics
from .checkpoints import Checkpointer, Progress


def _numbers(logs: Optional[Mapping[str, Any]]) -> Dict[str, float]:
    found = {}
    for name, value in (logs or {}).items():
        try:
            found[name] = float(np.asarray(value))
        except (TypeError, ValueError):
            continue
    return found


def make_callback(keras: Any, *, start: Progress, steps_per_epoch: int, accumulation: int,
                  checkpointer: Optional[Checkpointer], checkpoint_every: int, log_every: int, fail_on_nan: bool,
                  global_batch: int, started_at: float, emit: Callable[[str], None],
                  heartbeat: Callable[[], None] = lambda: None) -> Any:
    """The callback (of `keras`'s own class). `start`: where training resumes; `emit`: the chief's say, a no-op
    elsewhere; `heartbeat`: told after every call of steps and every epoch (the bundled program's hang guard)."""

    class SmtrainJob(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.progress = start
            self._epoch_began_at = start.epoch_step  # optimizer steps already done in the epoch in progress
            self._cut = False
            self._began = time.perf_counter()

        def on_epoch_begin(self, epoch: int, logs: Optional[Mapping[str, Any]] = None) -> None:
            self._epoch_began_at = self.progress.epoch_step if epoch == self.progress.epoch else 0
            self.progress = Progress(epoch, self._epoch_began_at, self.progress.global_step)
            self._began = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: Optional[Mapping[str, Any]] = None) -> None:
            # `batch`: Keras's index of the call's last micro-batch in this epoch (0-based).
            done = self._epoch_began_at + (batch + 1) // accumulation
            progress = Progress(self.progress.epoch, done, self.progress.global_step + done - self.progress.epoch_step)
            self.progress = progress
            heartbeat()
            values = _numbers(logs)
            loss = values.get("loss")
            if fail_on_nan and loss is not None and not math.isfinite(loss):
                raise NonFiniteLoss(f"training stopped: the loss became {'NaN' if math.isnan(loss) else 'infinite'} "
                                    f"at epoch {progress.epoch + 1} step {progress.global_step} (try a lower "
                                    "learning_rate, warmup_epochs, or check the data for bad values)")
            if log_every and progress.global_step % log_every == 0 and progress.epoch_step < steps_per_epoch:
                seconds = max(time.perf_counter() - self._began, 1e-9)
                rate = (done - self._epoch_began_at) * global_batch / seconds
                emit(metrics.progress_line(progress.epoch + 1, progress.global_step, values, rate,
                                           time.time() - started_at))
            if checkpoint_every and progress.global_step % checkpoint_every == 0 \
                    and progress.epoch_step < steps_per_epoch:
                self._save(progress)
            if done >= steps_per_epoch and self._epoch_began_at > 0:
                # The resumed epoch's remaining steps are done: Keras would run a whole epoch of them.
                self.model.stop_training = True
                self._cut = True

        def on_epoch_end(self, epoch: int, logs: Optional[Mapping[str, Any]] = None) -> None:
            if self._cut:  # first in the list: no other callback sees the stop that only ended the epoch
                self.model.stop_training = False
                self._cut = False
            self.progress = Progress(epoch + 1, 0, self.progress.global_step)
            self._save(self.progress)
            heartbeat()

        def _save(self, progress: Progress) -> None:
            if checkpointer is None:
                return
            path = checkpointer.save(progress)
            if path:
                emit(f"checkpoint saved {path} epoch={progress.epoch} step={progress.global_step}")

    return SmtrainJob()
