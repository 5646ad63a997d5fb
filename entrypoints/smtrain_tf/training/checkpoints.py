"""Training checkpoints: save every N steps and at epoch ends, resume from the newest usable one.

tf.train.CheckpointManager writes a checkpoint's data, then its index, and only then rewrites the
`checkpoint` state file (atomically, by rename): a process killed mid-save leaves the state file
naming the previous, complete checkpoint. Restoring tries the newest listed checkpoint first and
falls back to older ones if it cannot be read.

Under MultiWorkerMirrored every worker must save (saving can read variables through collectives);
workers other than the chief write to a private temporary directory, deleted after each save, so
only the chief's checkpoints reach the (S3-synced) checkpoint directory.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

import tensorflow as tf

from ..contract.errors import TrainingFailure
from ..contract.log import say
from ..distribute.choice import MWMS, PS
from ..distribute.distribution import Distribution
from ..keras_support.keras_compat import optimizer_variables


@dataclass(frozen=True)
class Progress:
    epoch: int        # completed epochs
    epoch_step: int   # steps done in the epoch in progress
    global_step: int  # steps done in all


def _short(exc: BaseException) -> str:
    """The first line of an error, without TensorFlow's function-node prefix."""
    text = str(getattr(exc, "message", None) or exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if first.startswith("{{") and "}}" in first:
        first = first[first.index("}}") + 2:].strip()
    return first[:300]


class Checkpointer:
    def __init__(self, directory: str, keep: int, *, kind: str, is_chief: bool, worker_index: int,
                 model: Any, optimizer: Any) -> None:
        self.directory = directory
        self.keep = keep
        self.kind = kind
        self.is_chief = is_chief
        self.worker_index = worker_index
        # Progress lives outside the strategy scope: a plain variable every strategy can save.
        self.progress = tf.Variable([0, 0, 0], dtype=tf.int64, trainable=False, name="progress")
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, progress=self.progress)
        # Made now, outside any strategy's scope, by every process: made at the first save instead (in a scope, or
        # restored on the chief only) it would be a variable the other workers wait to receive.
        _ = self.checkpoint.save_counter
        self._manager: Optional[tf.train.CheckpointManager] = None

    @property
    def writes(self) -> bool:
        """Who calls save(): the chief, and under MultiWorkerMirrored every worker."""
        return self.is_chief or self.kind == MWMS

    def _chief_manager(self) -> tf.train.CheckpointManager:
        if self._manager is None:
            os.makedirs(self.directory, exist_ok=True)
            self._manager = tf.train.CheckpointManager(self.checkpoint, self.directory, max_to_keep=self.keep)
        return self._manager

    def current(self) -> Progress:
        epoch, epoch_step, global_step = (int(v) for v in self.progress.numpy())
        return Progress(epoch, epoch_step, global_step)

    def set_progress(self, progress: Progress) -> None:
        self.progress.assign([progress.epoch, progress.epoch_step, progress.global_step])

    def restore(self) -> Optional[str]:
        """Restore the newest readable checkpoint of the directory; return its path, or None if there is none."""
        if not os.path.isdir(self.directory):
            return None
        state = tf.train.get_checkpoint_state(self.directory)
        if state is None:
            return None
        candidates: List[str] = list(reversed(list(state.all_model_checkpoint_paths))) or \
            [state.model_checkpoint_path]
        problems = []
        for path in candidates:
            if not os.path.isabs(path):
                path = os.path.join(self.directory, path)
            try:
                self.checkpoint.restore(path).assert_existing_objects_matched()
                return path
            except Exception as exc:  # noqa: BLE001 - a damaged file fails in many ways (IndexError included)
                problems.append(f"{os.path.basename(path)}: {_short(exc)}")
                say(f"warning: checkpoint {path} cannot be restored ({_short(exc)})")
        raise TrainingFailure(f"no usable checkpoint in {self.directory}: {problems[0]}; did the model, optimizer "
                              "or mixed_precision change? Remove the checkpoints or set checkpoint_dir to start afresh")

    def save(self, progress: Progress) -> Optional[str]:
        """Write a checkpoint; return its path on the chief, None elsewhere."""
        self.set_progress(progress)
        if self.is_chief:
            try:
                return self._chief_manager().save(checkpoint_number=progress.global_step)
            except Exception:
                # A save that failed (a full disk) leaves TensorFlow's <prefix>_temp directory: not a checkpoint.
                for partial in glob.glob(os.path.join(glob.escape(self.directory), f"ckpt-{progress.global_step}_temp*")):
                    shutil.rmtree(partial, ignore_errors=True)
                raise
        if self.kind != MWMS:
            return None
        scratch = tempfile.mkdtemp(prefix=f"smtrain-ckpt-worker{self.worker_index}-")
        try:
            tf.train.CheckpointManager(self.checkpoint, scratch, max_to_keep=1).save()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return None


def resume(checkpointer: Checkpointer, dist: Distribution, model: Any, optimizer: Any, steps_per_epoch: int,
           say: Callable[[str], None]) -> Progress:
    """Restore the newest checkpoint, give every process the chief's state, and say where training resumes."""
    restored = checkpointer.restore()
    if dist.multi_process and dist.kind != PS:
        # Whoever could not restore (no local copy of the checkpoints) takes the chief's state,
        # so that every process runs the same number of steps.
        dist.sync_from_chief(list(model.variables) + optimizer_variables(optimizer) + [checkpointer.progress])
    progress = checkpointer.current()
    if progress.epoch_step >= steps_per_epoch:  # the epoch got shorter (more replicas now)
        progress = Progress(progress.epoch + 1, 0, progress.global_step)
    if restored and dist.is_chief:
        say(f"resumed from {restored} at epoch {progress.epoch} step {progress.global_step}")
    elif progress.global_step and not dist.is_chief:
        say(f"continuing with the chief's state at epoch {progress.epoch} step {progress.global_step}")
    return progress
