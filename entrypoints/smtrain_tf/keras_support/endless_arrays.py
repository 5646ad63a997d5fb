"""Keras 3's array input made endless where its epoch count is all of it: each call then asks the data nothing.

On a finite dataset every step must ask whether there is data left: Keras's several steps per call ask for an
optional before each step (several_steps.py keeps that for finite data), and under several replicas
TensorFlow's distributed iterator asks whether every replica still has data (keras's array batches have no
static size, and under MultiWorkerMirrored the answer is a collective across the workers), in case one ends
before the others (tensorflow/python/distribute/input_lib.py `_enable_get_next_as_optional`). On the loop
bench's MLP those checks cost a third of each step on 2 hosts, about a fifth on 2 replicas and an eighth on
one device; an endless dataset (`repeat()`, infinite cardinality) is iterated without them.

Keras's epoch of arrays ends by its own count anyway (keras/src/trainers/epoch_iterator.py takes
`num_batches` batches each epoch), so the arrays' dataset is repeated where that count is certain to be all of
it and nothing more:
- arrays (Keras's ArrayDataAdapter), no steps_per_epoch (with which Keras would stop mid-repetition);
- whole calls: steps_per_execution divides the epoch's batches, so no call runs past the epoch's end;
- no partial batch: under several replicas a partial global batch may split into fewer pieces than there are
  workers, and a worker without one would take the next repetition's batch where TensorFlow gives it an empty
  one; one device follows the same rule, so that a check's one-device run takes what the planned run takes.
Each epoch is then one repetition, all from one iterator: Keras itself makes a new one for every epoch (and
under a strategy that costs about 0.1 s, a tenth of the loop bench's epoch on 2 replicas). The first epoch
takes the same batches in the same order as Keras's own; each later one is a new permutation, as `shuffle=True`
says, where Keras 3.15 repeats the first epoch's order whenever TensorFlow's global seed is set (as the wrap
sets it on several workers: each new iterator restarts the seeded permutation). Other inputs are left as they
are (tests/entrypoint/test_epoch_iterators.py).
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
            and getattr(adapter, "_partial_batch_size", None) == 0 and strategy is not None)


class _OneIterator:
    """The repeated dataset's one iterator, given to every epoch (made as the first begins)."""

    def __init__(self, dataset: Any) -> None:
        self._dataset = dataset
        self._iterator: Any = None

    def __iter__(self) -> Any:
        if self._iterator is None:
            self._iterator = iter(self._dataset)
        return self._iterator


def install() -> bool:
    """Patch Keras 3's TensorFlow epoch iterator (once per process); False where there is none (Keras 2)."""
    return patch_epoch_iterator(_INSTALLED, _patch)


def _patch(iterator_class: Any) -> None:
    original = iterator_class.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if endless(self):
            dataset = self.data_adapter.get_tf_dataset().repeat()
            self._distributed_dataset = _OneIterator(self._distribute_strategy.experimental_distribute_dataset(dataset))
            # With the count as steps_per_epoch Keras's progress and callbacks see the same epoch, which it ends by
            # that count, where it would end at the data's end.
            self.steps_per_epoch = self._num_batches

    iterator_class.__init__ = __init__
