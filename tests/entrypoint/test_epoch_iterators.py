"""keras_support/iterator_release.py and keras_support/endless_arrays.py: Keras's per-epoch iterators deleted on the
release thread, and arrays made endless, one iterator for every epoch, where Keras's epoch count is all of them:
the first epoch's batches as Keras's, a new permutation each later epoch. keras_support/several_steps.py: endless
data asked nothing, finite data Keras's own loop on one device, each replica's steps in order on 2 replicas, side
effects included. And keras_support/keras_repairs.py's accumulation on 2 replicas trains as one device on the
whole batch."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from .conftest import ENTRYPOINTS

# In a process of its own: the patches are on Keras's class, for the rest of the process.
PROGRAM = r"""
import json, sys, threading, time, weakref
sys.path.insert(0, sys.argv[1])
import numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from smtrain_tf.keras_support import endless_arrays, iterator_release, keras_repairs

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])  # Keras's iterators are MultiDeviceIterators
keras_repairs.install()  # several steps per call on several replicas, as the wrap runs them
rng = np.random.default_rng(0)
x, y = rng.normal(size=(96, 4)).astype("float32"), rng.integers(0, 3, 96)

def trained(examples, epochs=3):
    keras.utils.set_random_seed(7)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)])
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=3)
    # 96 examples in global batches of 16: 6 batches, 2 whole calls of 3; shuffled each epoch, as Keras does.
    model.fit(x[:examples], y[:examples], batch_size=16, epochs=epochs, verbose=0)
    return [w.copy() for w in model.get_weights()]

def epoch_orders():
    # Each epoch's examples, in order, as Keras's fit takes them from its epoch iterator (both replicas' shares).
    from keras.src.backend.tensorflow.trainer import TFEpochIterator
    keras.utils.set_random_seed(7)
    numbered = np.arange(96, dtype="float32")[:, None]
    epochs = TFEpochIterator(x=numbered, y=np.zeros(96, "float32"), batch_size=16, shuffle=True,
                             distribute_strategy=strategy, steps_per_execution=3)
    epochs.reset()  # as fit does before its first epoch
    orders = []
    for _ in range(3):
        seen = []
        for _, _, iterator in epochs:
            for _ in range(3):
                shares = strategy.experimental_local_results(next(iterator)[0])
                seen += [int(v) for share in shares for v in share.numpy()[:, 0]]
        orders.append(seen)
    return orders

before, before_one_epoch, keras_orders = trained(96), trained(96, epochs=1), epoch_orders()
deleted_on, checks_data = [], []
held = iterator_release.hold
def recording(iterator):
    if not any(iterator is made for made in checks_data):  # endless arrays give one iterator to every epoch
        checks_data.append(iterator)
        weakref.finalize(iterator, lambda: deleted_on.append(threading.current_thread().name))
    return held(iterator)
iterator_release.hold = recording
installed = [iterator_release.install(), endless_arrays.install()]
after = trained(96)
made = len(checks_data)
after_one_epoch, endless_orders = trained(96, epochs=1), epoch_orders()
made_in_all = len(checks_data)
checks_data = [bool(i._enable_get_next_as_optional) for i in checks_data]
deadline = time.monotonic() + 60
while len(deleted_on) < made_in_all and time.monotonic() < deadline:
    time.sleep(0.05)
first_deleted = list(deleted_on)
held_before_partial = []
def recording_partial(iterator):
    held_before_partial.append(bool(iterator._enable_get_next_as_optional))
    return held(iterator)
iterator_release.hold = recording_partial
partial = trained(88)  # a partial last batch (88 = 5 x 16 + 8): left finite
checks_data_partial = held_before_partial
iterator_release.hold = held  # the iterators are counted

# A step with a side effect (a tf.py_function, as smtrain check's recorder): the first step of each call slow.
order = []
class Recording(keras.Model):
    def train_step(self, data):
        logs = super().train_step(data)
        def seen(replica, first):
            if int(first) % 32 < 8:  # the first step of a call of 4 steps of 8 examples: replica 0's 0, replica 1's 4
                time.sleep(0.3)
            order.append((int(replica), int(first)))
            return 0
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        done = tf.py_function(seen, [replica, tf.cast(data[0][0, 0], tf.int32)], tf.int32)
        with tf.control_dependencies([done]):
            return tf.nest.map_structure(tf.identity, logs)

with strategy.scope():
    inputs = keras.Input((2,))
    recording = Recording(inputs, keras.layers.Dense(1)(inputs))
    recording.compile(keras.optimizers.SGD(1e-6), "mse", steps_per_execution=4)
numbered = np.stack([np.arange(64), np.zeros(64)], axis=1).astype("float32")  # each example's number, first
recording.fit(numbered, np.zeros(64, "float32"), batch_size=8, epochs=1, shuffle=False, verbose=0)

# Keras 3's own gradient accumulation (keras_repairs.py's fifth repair) on 2 replicas, against one device taking the
# whole batch at once.
def accumulated(on, k, batch, steps):
    keras.utils.set_random_seed(1)
    with on.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)])
        options = {"gradient_accumulation_steps": k} if k > 1 else {}
        model.compile(keras.optimizers.AdamW(0.01, weight_decay=0.01, clipnorm=1.0, **options),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=steps)
    model.fit(x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0)
    return model.get_weights(), int(model.optimizer.iterations.numpy())

whole, whole_updates = accumulated(tf.distribute.get_strategy(), 1, 32, 1)
accumulation = []
# One step per call and several (keras_repairs.py's own loop) on 2 replicas; a MirroredStrategy of one replica
# (a one-GPU host asked for mirrored) fails in Keras alike.
for on, steps, batch in ((strategy, 1, 16), (strategy, 3, 16), (tf.distribute.MirroredStrategy(["/cpu:0"]), 1, 32)):
    weights, updates = accumulated(on, 2, batch // 2 if on.num_replicas_in_sync == 1 else batch, steps)
    accumulation.append({"steps": steps, "replicas": on.num_replicas_in_sync, "updates": updates,
                         "whole_updates": whole_updates,
                         "apart": max(float(np.abs(a - b).max()) for a, b in zip(weights, whole))})
print(json.dumps({"order": order, "accumulation": accumulation,
                  "partial_finite": bool(np.isfinite(np.concatenate([w.ravel() for w in partial])).all()),
                  "installed": installed, "again": [iterator_release.install(), endless_arrays.install()],
                  "made": made, "made_in_all": made_in_all, "deleted_on": first_deleted, "checks_data": checks_data,
                  "checks_data_partial": checks_data_partial, "made_partial": len(checks_data_partial),
                  "keras_orders": keras_orders, "endless_orders": endless_orders,
                  "weights_apart": max(float(np.abs(a - b).max()) for a, b in zip(before, after)),
                  "one_epoch_apart": max(float(np.abs(a - b).max()) for a, b in zip(before_one_epoch, after_one_epoch))}))
"""


@pytest.fixture(scope="module")
def found() -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PROGRAM, ENTRYPOINTS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_keras_s_epoch_iterators_are_deleted_on_the_release_thread_endless_and_train_the_same_weights(
        found: dict[str, Any]) -> None:
    assert found["installed"] == [True, True] and found["again"] == [True, True]
    # Endless arrays: one iterator for the 3 epochs, deleted by the release thread, none by fit's loop (the main
    # thread). Finite data: Keras makes one as the first epoch begins and one as each ends (epoch_iterator.py): 6
    # (the model is built from zeros: keras_repairs.py).
    assert found["made"] == 1, found
    assert found["made_in_all"] == 3, found  # and one for a fit of one epoch, one for epoch_orders' 3 epochs
    assert found["deleted_on"] == ["smtrain-iterator-release"] * 3, found
    # Endless: TensorFlow's per-step check that every replica has data is off; with a partial batch it stays on.
    assert found["checks_data"] == [False] * 3, found
    assert found["made_partial"] == 6 and all(found["checks_data_partial"]) and found["partial_finite"], found
    # The first epoch: the same batches in the same order as Keras's own, so the same weights, exactly.
    assert found["one_epoch_apart"] == 0.0, found


def test_endless_arrays_reshuffle_every_epoch_where_keras_under_a_global_seed_repeats_the_first_order(
        found: dict[str, Any]) -> None:
    keras_orders, endless_orders = found["keras_orders"], found["endless_orders"]
    assert all(sorted(order) == list(range(96)) for order in keras_orders + endless_orders), found
    # Keras 3.15 with TensorFlow's global seed set: each epoch's new iterator restarts the seeded permutation.
    assert keras_orders[0] == keras_orders[1] == keras_orders[2], keras_orders
    # One iterator over the repeated data: the first epoch as Keras's, then a new permutation each epoch.
    assert endless_orders[0] == keras_orders[0], found
    assert len({tuple(order) for order in endless_orders}) == 3, endless_orders
    assert found["weights_apart"] > 0.0, found  # so three epochs train otherwise


def test_several_steps_per_call_run_each_replicas_steps_in_order(found: dict[str, Any]) -> None:
    # 8 steps in 2 calls of 4 on 2 replicas; each call's first step is slow to end its side effect, which the call's
    # later steps wait for (TensorFlow alone would start them: their own inputs are there).
    for replica, firsts in ((0, list(range(0, 64, 8))), (1, list(range(4, 64, 8)))):
        assert [first for seen_by, first in found["order"] if seen_by == replica] == firsts, found["order"]


class _Strategy:
    def __init__(self, replicas: int) -> None:
        self.num_replicas_in_sync = replicas


def _epoch_iterator(examples: int, batch: int, replicas: int = 2, steps_per_execution: int = 1,
                    steps_per_epoch: Any = None, data: Any = None) -> Any:
    import tensorflow as tf
    from keras.src.backend.tensorflow.trainer import TFEpochIterator

    x = np.zeros((examples, 2), np.float32)
    iterator = TFEpochIterator(x=x if data is None else data, y=None if data is not None else x[:, 0], batch_size=batch,
                               steps_per_epoch=steps_per_epoch, distribute_strategy=tf.distribute.get_strategy(),
                               steps_per_execution=steps_per_execution)
    iterator._distribute_strategy = _Strategy(replicas)  # endless() reads the replica count only
    return iterator


@pytest.mark.parametrize(("examples", "batch", "steps_per_execution", "expected"), [
    (96, 16, 3, True),    # 6 batches, 2 whole calls
    (96, 16, 6, True),    # 6 batches, 1 call: at the count
    (96, 16, 4, False),   # 6 batches in calls of 4: the second call would run past the epoch
    (96, 16, 12, False),  # past the count
    (95, 16, 1, False),   # a partial last batch of 15
    (97, 16, 1, False),   # a partial last batch of 1
    (16, 16, 1, True),    # one whole batch
])
def test_arrays_are_endless_only_where_the_epoch_is_whole_batches_and_whole_calls(
        examples: int, batch: int, steps_per_execution: int, expected: bool) -> None:
    from smtrain_tf.keras_support import endless_arrays

    assert endless_arrays.endless(_epoch_iterator(examples, batch, steps_per_execution=steps_per_execution)) is expected


def test_arrays_stay_finite_with_steps_per_epoch_or_a_dataset_on_every_replica_count() -> None:
    import tensorflow as tf
    from smtrain_tf.keras_support import endless_arrays

    assert endless_arrays.endless(_epoch_iterator(96, 16)) is True
    assert endless_arrays.endless(_epoch_iterator(96, 16, steps_per_epoch=6)) is False  # Keras keeps one iterator
    assert endless_arrays.endless(_epoch_iterator(96, 16, replicas=1)) is True  # one device: the same rule
    assert endless_arrays.endless(_epoch_iterator(95, 16, replicas=1)) is False  # (a check's one device too)
    dataset = tf.data.Dataset.from_tensor_slices((np.zeros((96, 2), np.float32), np.zeros(96))).batch(16)
    assert endless_arrays.endless(_epoch_iterator(96, 16, data=dataset)) is False  # the script's own data


def test_an_optimizers_own_gradient_accumulation_on_two_replicas_trains_as_one_device_on_the_whole_batch(
        found: dict[str, Any]) -> None:
    # AdamW (weight decay, clipping) accumulating 2 micro-batches of 16 over 2 replicas; one device: batches of 32.
    # Unrepaired, Keras 3.15 raises in its update-or-accumulate cond (keras-team/keras#20582).
    assert [(run["replicas"], run["steps"], run["updates"]) for run in found["accumulation"]] == [
        (2, 1, 6), (2, 3, 6), (1, 1, 6)], found["accumulation"]
    assert all(run["whole_updates"] == 6 and run["apart"] < 1e-6 for run in found["accumulation"]), found["accumulation"]


# keras_support/several_steps.py on one device, in a process of its own (the patch is on Keras's trainer class).
ONE_DEVICE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np, tensorflow as tf
import keras
from smtrain_tf.keras_support import several_steps

several_steps.install()
asked = []
endless = several_steps.endless
def recording(iterator):
    asked.append(endless(iterator))
    return asked[-1]
several_steps.endless = recording  # the patched function looks it up at each call
rng = np.random.default_rng(0)
x, y = rng.normal(size=(96, 4)).astype("float32"), rng.integers(0, 3, 96)

def trained(steps, data, steps_per_epoch=None, jit_compile=False):
    keras.utils.set_random_seed(7)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                  steps_per_execution=steps, jit_compile=jit_compile)
    del asked[:]
    history = model.fit(data, epochs=2, steps_per_epoch=steps_per_epoch, verbose=0)
    return {"weights": [w.tolist() for w in model.get_weights()], "history": history.history, "asked": list(asked),
            "function": model.train_function.__qualname__, "updates": int(model.optimizer.iterations.numpy())}

stream = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(16)  # endless: steps_per_epoch ends the epoch
finite = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)  # 6 batches
partial = tf.data.Dataset.from_tensor_slices((x[:88], y[:88])).batch(16)  # 6 batches, the last of 8
runs = {
    "endless_1": trained(1, stream, 6), "endless_3": trained(3, stream, 6), "endless_4": trained(4, stream, 6),
    "finite_1": trained(1, finite), "finite_3": trained(3, finite),
    "partial_1": trained(1, partial), "partial_4": trained(4, partial),
    "jit_3": trained(3, stream, 6, jit_compile=True),
}
print(json.dumps(runs))
"""


@pytest.fixture(scope="module")
def one_device() -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", ONE_DEVICE, ENTRYPOINTS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_several_steps_on_endless_data_ask_it_nothing_and_train_as_one_step_per_call(
        one_device: dict[str, Any]) -> None:
    ours = "install.<locals>._make_function.<locals>.function"
    endless_1, endless_3 = one_device["endless_1"], one_device["endless_3"]
    assert endless_3["function"] == ours and endless_3["asked"] == [True] * 4, endless_3  # 2 epochs of 2 calls
    # Keras's own function for one step per call; the same ops on the same batches in the same order.
    assert endless_1["function"] != ours and endless_1["asked"] == [], endless_1
    assert endless_3["weights"] == endless_1["weights"] and endless_3["history"] == endless_1["history"]
    # Calls of 4 in an epoch of 6 steps: 8 steps an epoch, as Keras's own loop runs them on endless data.
    assert one_device["endless_4"]["updates"] == 16, one_device["endless_4"]


def test_several_steps_on_finite_data_are_keras_s_own_on_one_device(one_device: dict[str, Any]) -> None:
    for name, calls in (("finite_3", 4), ("partial_4", 4)):
        run = one_device[name]
        # Asked once per call (finite), Keras's own loop of optionals then runs it, ending where the data does.
        assert run["asked"] == [False] * calls, run
        assert run["updates"] == 12, run
    assert one_device["finite_3"]["weights"] == one_device["finite_1"]["weights"]
    assert one_device["partial_4"]["weights"] == one_device["partial_1"]["weights"]
    assert one_device["partial_4"]["history"] == one_device["partial_1"]["history"]


def test_several_steps_leave_an_xla_model_on_one_device_to_keras(one_device: dict[str, Any]) -> None:
    jit = one_device["jit_3"]
    assert jit["function"] != "install.<locals>._make_function.<locals>.function" and jit["asked"] == [], jit
    assert jit["updates"] == 12, jit
