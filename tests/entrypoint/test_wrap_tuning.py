"""The wrap's tuned fit (smtrain_tf/wrap/fit_tuning.py): several steps per call, the same training.

The slow tests run a tutorial-style script (argparse with dashes, its own MirroredStrategy, fit with the
default progress bar) through smtrain_wrap.py twice, tuned and with SMTRAIN_WRAP_TUNING=off, with the
same seed and data order, and compare the saved weights after an epoch. test_wrap_layouts.py compares
Keras's own fit across layouts (default, two replicas, two hosts), tuned.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from .sagemaker_env import Host
from .test_wrap import TIMEOUT, _assert_ok, _wrapped

slow = pytest.mark.slow  # starts processes that train for real

SCRIPT = """
import argparse
import json
import os

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--model_dir")
args = parser.parse_args()

tf.keras.utils.set_random_seed(3)
data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "part-0.npz"))
x, y = data["x"].reshape(len(data["x"]), -1), data["y"]
strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])


class Seen(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        self.steps_per_execution = self.model.steps_per_execution


seen = Seen()
history = model.fit(x, y, epochs=args.epochs, batch_size=args.batch_size, validation_split=0.1,
                    callbacks=[seenCALLBACKS])
np.savez(os.path.join(os.environ["SM_MODEL_DIR"], "weights.npz"), *model.get_weights())
with open(os.path.join(os.environ["SM_MODEL_DIR"], "fit.json"), "w") as f:
    json.dump({"steps_per_execution": seen.steps_per_execution, "after": model.steps_per_execution,
               "iterations": int(model.optimizer.iterations.numpy()), "loss": history.history["loss"]}, f)
"""

# A user's callback that counts batches: Keras would call it once per call of several steps.
COUNTING = """
class Count(tf.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        print(f"counted {batch};")


"""


def _run(tmp_path: Path, name: str, channels: dict[str, Path], hosts: list[Host], env: dict[str, str],
         script: str = SCRIPT.replace("CALLBACKS", "")) -> tuple[str, dict[str, Any], list[np.ndarray]]:
    host, wrap = _wrapped(tmp_path / name, channels, script, env=env, hyperparameters={"epochs": 1, "batch-size": 32})
    hosts.append(host.start(script=wrap))
    _assert_ok(host, host.wait(TIMEOUT))
    saved = np.load(host.model_dir / "weights.npz")
    weights = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    return host.stdout(), json.loads((host.model_dir / "fit.json").read_text()), weights


def _assert_same_training(tuned: list[np.ndarray], untuned: list[np.ndarray]) -> None:
    assert len(tuned) == len(untuned)
    for a, b in zip(tuned, untuned, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # float32: the same sums, another graph


@slow
def test_tuned_fit_trains_the_same_weights_as_keras_untouched(tmp_path: Path, digits_npz, digits,
                                                               hosts: list[Host]) -> None:
    channels = {"train": digits_npz["train"]}
    out, tuned, tuned_weights = _run(tmp_path, "tuned", channels, hosts, {})
    plain_out, plain, plain_weights = _run(tmp_path, "plain", channels, hosts, {"SMTRAIN_WRAP_TUNING": "off"})
    # 90% of the rows in batches of 32: 41 batches, prime: calls of 20, Keras's last one of the epoch shorter.
    batches = -(-int(len(digits["y_train"]) * 0.9) // 32)
    assert batches == 41
    assert tuned["steps_per_execution"] == 20 and plain["steps_per_execution"] == 1
    assert tuned["after"] == plain["after"] == 1  # the script's own again once fit returned
    assert tuned["iterations"] == plain["iterations"] == batches
    assert out.count("Keras fit tuned: 20 steps per tf.function call") == 1
    assert "Keras fit tuned" not in plain_out
    _assert_same_training(tuned_weights, plain_weights)
    np.testing.assert_allclose(tuned["loss"], plain["loss"], rtol=1e-5)


@slow
def test_a_callback_acting_on_every_batch_keeps_one_step_per_call(tmp_path: Path, digits_npz, digits,
                                                                   hosts: list[Host]) -> None:
    script = SCRIPT.replace("strategy = ", COUNTING + "strategy = ").replace("CALLBACKS", ", Count()")
    out, fitted, _ = _run(tmp_path, "counting", {"train": digits_npz["train"]}, hosts, {}, script)
    batches = -(-int(len(digits["y_train"]) * 0.9) // 32)
    assert fitted["steps_per_execution"] == 1
    # (The progress bar shares the lines: the counts are found within them.)
    assert [int(n) for n in re.findall(r"counted (\d+);", out)] == list(range(batches))
    assert "fit runs one step per call: Count acts on every batch" in out


# --- the choice, without training ----------------------------------------------------------------------

def _ctx(tuning: bool = True, target: int = 20, kind: str = "default", replicas: int = 1) -> Any:
    said: list[str] = []
    return SimpleNamespace(settings=SimpleNamespace(tuning=tuning), contract=SimpleNamespace(hp=lambda name: target),
                           kind=kind, replicas=replicas, said=said,
                           say_once=lambda line: None if line in said else said.append(line))  # as WrapContext's


class _Model(SimpleNamespace):
    """A compiled model's attributes that tuning reads and sets; hashed by identity and weakly referenced, as
    Keras's models are."""

    __hash__ = object.__hash__


def _model(steps: int = 1) -> Any:
    return _Model(steps_per_execution=steps, run_eagerly=False, train_function="made", test_function="made",
                  predict_function="made", optimizer="adam", _compile_loss="loss", _compile_metrics=None)


def test_steps_per_call_divide_the_steps_the_call_asks_for_and_prefer_the_epochs_batches() -> None:
    from smtrain_tf.wrap.fit_tuning import choose

    x = np.zeros((1875 * 32, 4), np.float32)
    assert choose(20, {"x": x, "batch_size": 32}) == 15  # 1875 batches: 15 divides them, 20 would not
    assert choose(20, {"x": np.zeros((1877 * 32, 1)), "batch_size": 32}) == 20  # 1877 is prime: Keras's last call is short
    assert choose(20, {"x": x, "batch_size": 32, "steps_per_epoch": 150}) == 15  # whole calls: never 160 steps
    assert choose(20, {"x": x, "batch_size": 32, "steps_per_epoch": 151}) == 1  # prime: one step per call
    assert choose(20, {"x": x, "batch_size": 32, "steps_per_epoch": 100, "validation_steps": 30}) == 10
    assert choose(20, {"x": x[:100], "batch_size": 32}) == 4  # an epoch of 4 batches runs in one call
    assert choose(20, {"x": x, "validation_split": 0.2, "batch_size": 64}) == 15  # 750 batches
    assert choose(20, {"x": object()}) == 20  # data of unknown length ends the epoch itself


def test_tune_holds_for_the_call_keeps_its_functions_and_leaves_what_the_script_chose() -> None:
    import tensorflow as tf
    from smtrain_tf.wrap.fit_tuning import tune

    ctx, model = _ctx(), _model()
    given = {"x": np.zeros((640, 4), np.float32), "batch_size": 32}
    restore = tune(ctx, model, given, "train.py:9")
    assert model.steps_per_execution == 20 and model.train_function is None  # Keras makes it again in fit
    model.train_function, model.test_function = "tuned train", "tuned test"  # what Keras's fit made
    restore()
    # After the call: the script's count and functions (its evaluate/predict steps are not rounded up to 20).
    assert (model.steps_per_execution, model.train_function, model.predict_function) == (1, "made", "made")
    restore = tune(ctx, model, given, "train.py:9")  # fit in a loop: the tuned functions again, no new trace
    assert (model.steps_per_execution, model.train_function, model.test_function) == (20, "tuned train", "tuned test")
    restore()
    assert len(ctx.said) == 1 and "train.py:9: Keras fit tuned: 20 steps per tf.function call" in ctx.said[0]
    model.optimizer = "a new one"  # compiled again: the kept functions belong to the old compile
    tune(ctx, model, given, "train.py:9")
    assert model.train_function is None

    own = _model(8)  # compiled with steps_per_execution=8
    tune(ctx, own, given, "train.py:9")
    assert own.steps_per_execution == 8 and "as the script compiled it" in ctx.said[-1]

    off, untouched = _ctx(tuning=False), _model()
    tune(off, untouched, given, "train.py:9")
    assert untouched.steps_per_execution == 1 and off.said == []
    for kind in ("mirrored", "multi_worker_mirrored"):  # several replicas: tuned too (keras_repairs.py)
        several = _ctx(kind=kind, replicas=2)
        tune(several, untouched, given, "train.py:9")()
        assert several.said and "Keras fit tuned: 20 steps" in several.said[0]
    one_replica = _ctx(kind="mirrored", replicas=1)
    tune(one_replica, untouched, given, "train.py:9")()
    assert one_replica.said and "Keras fit tuned" in one_replica.said[0]

    class EveryBatch(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            pass

    class EveryTestBatch(tf.keras.callbacks.Callback):
        def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
            pass

    fresh = _model()
    tune(ctx, fresh, {**given, "callbacks": [tf.keras.callbacks.EarlyStopping(), EveryBatch()]}, "train.py:12")
    assert fresh.steps_per_execution == 1 and "EveryBatch acts on every batch" in ctx.said[-1]
    listed = tf.keras.callbacks.CallbackList([EveryBatch()])  # a list the script built: its callbacks named
    tune(ctx, fresh, {**given, "callbacks": listed}, "train.py:13")
    assert fresh.steps_per_execution == 1 and "train.py:13: fit runs one step per call: EveryBatch" in ctx.said[-1]
    # A test-batch hook acts during fit's validation only.
    tune(ctx, fresh, {**given, "callbacks": [EveryTestBatch()], "validation_split": 0.2}, "train.py:14")
    assert fresh.steps_per_execution == 1 and "EveryTestBatch acts on every batch" in ctx.said[-1]
    restore = tune(ctx, fresh, {**given, "callbacks": [EveryTestBatch()]}, "train.py:15")
    assert fresh.steps_per_execution == 20
    restore()
    # Epoch-only Keras callbacks leave it tuned; TensorBoard's steps per second is written every batch.
    epoch_only = [tf.keras.callbacks.EarlyStopping(), tf.keras.callbacks.CSVLogger("l"),
                  tf.keras.callbacks.TensorBoard("tb")]
    tune(ctx, fresh, {**given, "callbacks": epoch_only}, "train.py:16")()
    tune(ctx, fresh, {**given, "callbacks": [tf.keras.callbacks.TensorBoard("tb", write_steps_per_second=True)]},
         "train.py:17")
    assert fresh.steps_per_execution == 1 and "TensorBoard acts on every batch" in ctx.said[-1]
    # A count that divides nothing it must: one step per call, and why.
    tune(ctx, fresh, {**given, "steps_per_epoch": 151}, "train.py:18")
    assert fresh.steps_per_execution == 1 and "steps_per_epoch=151 has no divisor from 2 to 20" in ctx.said[-1]
