"""Keras 3's per-epoch data iterators released by a thread of their own, not by the training loop.

Keras's fit makes a new iterator over the data at each epoch (two, in fact: keras/src/trainers/
epoch_iterator.py makes one when an epoch ends and, with no steps_per_epoch, another when the next
begins), and the last reference to the old one is dropped in fit's loop, at the next epoch's first
step. Deleting a TensorFlow iterator cancels its prefetching (under a strategy it is a MultiDevice-
Iterator, with a buffer per device), and that blocks the thread that drops it: measured on the loop
bench's MLP, 0.4 s on one device and 0.2-14 s under MirroredStrategy on 2 CPU replicas, at an epoch of
0.9-1.7 s of steps. So each iterator Keras makes is also held here, and a thread of this module lets go of
it once it holds the last reference: the deletion happens there, while the next epoch trains.

Nothing else changes: the same iterators, made at the same moments, over the same data in the same order
(the weights are equal, tests/entrypoint/test_wrap_tuning.py); only the thread that deletes them.
Keras 2 (tf_keras) is left as it is.
"""

from __future__ import annotations

import atexit
import queue
import sys
import threading
from typing import Any, List, Optional

from .keras_compat import patch_epoch_iterator

_INSTALLED = "_smtrain_releases_iterators"
_POLL_S = 0.05  # how soon an iterator is deleted after its last use (it still holds its prefetched batches)
# At the interpreter's exit the thread lets go of all it holds and ends before Python finalizes: a daemon thread
# still inside TensorFlow's C++ then is killed by an unwind that aborts the process ("FATAL: exception not
# rethrown", exit -6). The wait is bounded, as a deletion measured up to 14 s.
_EXIT_WAIT_S = 60.0
_STOP = object()

_arrived: "queue.Queue[Any]" = queue.Queue()
_thread: Optional[threading.Thread] = None
_lock = threading.Lock()


def _references(held: List[Any], index: int) -> int:
    return sys.getrefcount(held[index])


# What _references counts for an object only a list refers to, measured, not assumed: the interpreter's own
# temporary references differ between Python versions.
_ALONE = _references([object()], 0)


def _release_loop() -> None:
    held: List[Any] = []
    while True:
        try:
            arrived = _arrived.get(timeout=_POLL_S if held else None)
        except queue.Empty:
            arrived = None
        if arrived is _STOP:
            return  # `held` goes with this frame: what only it held is deleted here, the rest at Python's exit
        if arrived is not None and not any(arrived is h for h in held):  # endless_arrays.py gives one to every epoch
            held.append(arrived)
            arrived = None  # counted below otherwise
        # Only this thread can drop a reference it alone holds: nobody else can take a new one.
        held = [held[index] for index in range(len(held)) if _references(held, index) > _ALONE]


def hold(iterator: Any) -> Any:
    """Keep `iterator` until nothing else refers to it, then delete it on the release thread; return it."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_release_loop, name="smtrain-iterator-release", daemon=True)
            _thread.start()
            atexit.register(_stop)
    _arrived.put(iterator)
    return iterator


def _stop() -> None:
    _arrived.put(_STOP)
    if _thread is not None:
        _thread.join(_EXIT_WAIT_S)


class _Held:
    """The distributed dataset Keras iterates each epoch; each iterator it makes is also held by the release thread."""

    def __init__(self, dataset: Any) -> None:
        self._dataset = dataset

    def __iter__(self) -> Any:
        return hold(iter(self._dataset))


def install() -> bool:
    """Patch Keras 3's TensorFlow epoch iterator (once per process); False where there is none (Keras 2)."""
    return patch_epoch_iterator(_INSTALLED, _patch)


def _patch(iterator_class: Any) -> None:
    original = iterator_class._get_iterator

    def _get_iterator(self: Any) -> Any:
        return _Held(original(self))

    iterator_class._get_iterator = _get_iterator
