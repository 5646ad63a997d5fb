"""TensorFlow errors whose cause is known, turned into a one-line TrainingFailure.

Shared by the bundled entrypoint's exit path and smtrain_tf.fit. Looks TensorFlow up in
sys.modules instead of importing it: an error can only be TensorFlow's once TensorFlow is loaded.
"""

from __future__ import annotations

import errno
import sys
from typing import Optional

from .errors import PeerFailure, TrainingFailure

# A write the disk (or the process's file-size limit) refused: ENOSPC and EFBIG as TensorFlow's file system words them.
_FULL_DISK_CLUES = ("no space left on device", "file too large", "disk quota exceeded")
_PEER_CLUES = ("unhealthy", "heartbeat", "aborted", "deadline", "timed out", "timeout", "connection", "socket",
               "unavailable", "failed to connect")


def recognise(exc: BaseException) -> Optional[TrainingFailure]:
    """TensorFlow errors with a known cause: a dead or silent peer, memory exhausted, a full disk; else None."""
    if isinstance(exc, TrainingFailure):
        return exc
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return _full_disk(f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc))
    tf = sys.modules.get("tensorflow")
    if tf is None or not isinstance(exc, tf.errors.OpError):
        return None
    lines = [line.strip() for line in (exc.message or "").splitlines() if line.strip()]
    if isinstance(exc, tf.errors.ResourceExhaustedError):
        first = next((line for line in lines if "OOM" in line or "memory" in line.lower()), lines[0] if lines else "")
        return TrainingFailure(f"out of memory ({first[:300]}); lower batch_size_per_replica or use a larger instance")
    full = next((line for line in lines if any(clue in line.lower() for clue in _FULL_DISK_CLUES)), None)
    if full is not None:
        if full.startswith("{{") and "}}" in full:  # TensorFlow's function-node prefix
            full = full[full.index("}}") + 2:].strip()
        return _full_disk(full)
    peer_errors = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError,
                   tf.errors.AbortedError)
    lowered = " ".join(lines).lower()
    if not (isinstance(exc, peer_errors) or "collective ops is aborted" in lowered or "heartbeat" in lowered):
        return None
    # TensorFlow leads with "Graph execution error:"; the telling line names the lost task.
    telling = [i for i, line in enumerate(lines) if any(k in line.lower() for k in _PEER_CLUES)]
    if telling:
        i = telling[0]
        detail = " ".join(lines[i:i + 2]) if lines[i].endswith(":") else lines[i]
    else:
        detail = lines[0] if lines else ""
    return PeerFailure(f"lost contact with another process of the job ({type(exc).__name__}: {detail[:400]})")


def _full_disk(detail: str) -> TrainingFailure:
    return TrainingFailure(f"a write failed: the disk is full ({detail[:300]}); give the instance a larger volume "
                           "(compute.volume_size) or write less")
