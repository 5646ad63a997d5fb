"""Keras 3's array input under several replicas, made endless: TensorFlow then skips its per-step data check.

On a finite distributed dataset TensorFlow handles a last, partial batch at every step: its iterator
asks whether every replica still has data (keras's array batches have no static size, and under
MultiWorkerMirrored the answer is a collective across the workers), in case one ends before the others.
On the loop bench's MLP that check cost a third of each step on 2 hosts and about a fifth on 2 replicas;
an endless dataset (`repeat()`, infinite cardinality) is iterated without it
(tensorflow/python/distribute/input_lib.py `_enable_get_next_as_optional`).

Keras's epoch of arrays ends by its own count anyway (keras/src/trainers/epoch_iterator.py takes
`num_batches` batches from a fresh iterator each epoch), so the wrap repeats the array adapter's dataset
where that count is certain to be all of it and nothing more:
- arrays (Keras's ArrayDataAdapter), no steps_per_epoch (which would keep one iterator over epochs);
- whole calls: steps_per_execution divides the epoch's batches, so no call runs past the epoch's end;
- no partial batch: a partial global batch may split into fewer pieces than there are workers, and a
  worker without one would take the next repetition's batch where TensorFlow gives it an empty one.
Each epoch then takes the same batches in the same order as Keras's own (the first pass of a fresh
iterator), so the weights are equal (tests/entrypoint/test_endless_arrays.py); other inputs are left as they are.
"""

from __future__ import annotations

from typing import Any

from .keras_compat import patch_epoch_iterator

_INSTALLED = "_smtrain_endless_arrays"


def endless(epoch_iterator: Any) -> bool:
    """Whether this epoch iterator's data can be made endless (see the module's docstring)."""
    from keras.src.trainers.data_adapters.array_data_adapter import ArrayDataAdapter

    adapter = epoch_iterator.data_adapter
    batches = epoch_iterator._num_batches
    strategy = epoch_iterator._distribute_strategy
    return (isinstance(adapter, ArrayDataAdapter) and epoch_iterator.steps_per_epoch is None and bool(batches)
            and batches % int(epoch_iterator.steps_per_execution) == 0
            and getattr(adapter, "_partial_batch_size", None) == 0
            and strategy is not None and strategy.num_replicas_in_sync > 1)


def install() -> bool:
    """Patch Keras 3's TensorFlow epoch iterator (once per process); False where there is none (Keras 2)."""
    return patch_epoch_iterator(_INSTALLED, _patch)


def _patch(iterator_class: Any) -> None:
    original = iterator_class.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if endless(self):
            dataset = self.data_adapter.get_tf_dataset().repeat()
            self._distributed_dataset = self._distribute_strategy.experimental_distribute_dataset(dataset)
            # Keras makes the next epoch's iterator as an epoch ends, and with no steps_per_epoch throws it away for
            # another as the next begins; with the count as steps_per_epoch it keeps the first (one fewer per epoch).
            self.steps_per_epoch = self._num_batches

    iterator_class.__init__ = __init__
