"""smtrain_tf.fit and smtrain_tf.save in a script of the user's own, trained for real under each strategy."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.support.horovod_env import rank_output, required_horovod_python, run_two_ranks

from .conftest import ENTRYPOINTS
from .sagemaker_env import Host, free_ports, make_host, metric_lines, mwms_tf_config, parse_metrics, ps_tf_config

pytestmark = pytest.mark.slow

TIMEOUT = 300

# The user's script: their argparse, their data loading, their model; smtrain_tf for the rest.
SCRIPT = '''
import argparse, glob, json, os

import numpy as np
import smtrain_tf

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch_size", type=int, default=32)
parser.add_argument("--model_dir", default=None)
args = parser.parse_args()


def load(name):
    parts = [np.load(path) for path in sorted(glob.glob(os.path.join(smtrain_tf.channel(name), "*.npz")))]
    return np.concatenate([p["x"] for p in parts]), np.concatenate([p["y"] for p in parts])


strategy = smtrain_tf.strategy()
import tensorflow as tf  # noqa: E402

tf.keras.utils.set_random_seed(7)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((8, 8)), tf.keras.layers.Flatten(),
                                 tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(smtrain_tf.scaled_learning_rate(0.002, "sqrt")),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
log = os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], "epochs.csv")
train, validation = load("train"), load("validation")
if os.environ.get("AS_DATASETS"):  # the same data as tf.data datasets of examples
    train, validation = (tf.data.Dataset.from_tensor_slices(pair) for pair in (train, validation))
history = smtrain_tf.fit(model, train, validation, epochs=args.epochs,
                         batch_size_per_replica=args.batch_size, shuffle_buffer=2000,
                         callbacks=[tf.keras.callbacks.CSVLogger(log)])
print(f"history epochs={history.epoch} hyperparameters={json.dumps(smtrain_tf.hyperparameters(), sort_keys=True)}")
print("saved " + json.dumps(smtrain_tf.save(model)), flush=True)
'''


@pytest.fixture(scope="module")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The job's code directory as the bundle lays it out: the user's script beside smtrain_tf."""
    root = tmp_path_factory.mktemp("code")
    shutil.copytree(Path(ENTRYPOINTS) / "smtrain_tf", root / "smtrain_tf",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "train.py").write_text(SCRIPT)
    return root


def _ok(host: Host, code: int) -> None:
    assert code == 0, f"{host.name} exited {code}\nstdout:\n{host.stdout()[-3000:]}\nstderr:\n{host.stderr()[-3000:]}"
    assert not host.failure_file.exists()


def _digest(text: str) -> str:
    found = re.findall(r"^weights_sha256=([0-9a-f]{64})$", text, re.M)
    assert len(found) == 1, text[-2000:]
    return found[0]


def _saved(text: str) -> list[str]:
    return json.loads(re.search(r"^saved (\[.*\])$", text, re.M).group(1))


def _chief_artifacts(host: Host, text: str) -> None:
    assert _saved(text) == [str(host.model_dir / "1"), str(host.model_dir / "model.keras")]
    assert sorted(p.name for p in host.model_dir.iterdir()) == ["1", "model.keras"]
    assert (host.model_dir / "1" / "saved_model.pb").is_file()


def _val_accuracy(text: str) -> float:
    return float(parse_metrics(metric_lines(text)[-1])["val_accuracy"])


def _heldout_accuracy(host: Host, digits: dict[str, np.ndarray]) -> float:
    import tensorflow as tf

    model = tf.keras.models.load_model(str(host.model_dir / "model.keras"))
    keras_accuracy = float(np.mean(model.predict(digits["x_val"], verbose=0).argmax(axis=1) == digits["y_val"]))
    serve = tf.saved_model.load(str(host.model_dir / "1")).signatures["serving_default"]
    [name] = serve.structured_input_signature[1]
    [outputs] = serve(**{name: tf.constant(digits["x_val"])}).values()
    assert np.mean(outputs.numpy().argmax(axis=1) == digits["y_val"]) == pytest.approx(keras_accuracy)
    return keras_accuracy


def _host(root: Path, digits_npz: dict[str, Path], epochs: int, **kwargs) -> Host:
    return make_host(root, kwargs.pop("name", "algo-1"), kwargs.pop("names", ["algo-1"]), channels=digits_npz,
                     hyperparameters={"epochs": epochs, "batch_size": 32}, **kwargs)


# --- one process ----------------------------------------------------------------------------------

def test_default_strategy_trains_saves_and_resumes(tmp_path: Path, code: Path, digits_npz, digits,
                                                   hosts: list[Host]) -> None:
    host = _host(tmp_path, digits_npz, 6)
    hosts.append(host.start(script=code / "train.py"))
    _ok(host, host.wait(TIMEOUT))
    out = host.stdout()
    assert out.splitlines()[0].startswith("gpus: none")
    assert "config strategy=default replicas=1" in out and "effective_batch_size=32" in out
    assert [parse_metrics(line)["epoch"] for line in metric_lines(out)] == [str(e) for e in range(1, 7)]
    # The script's own hyperparameters, as the SDK sends them: SM_HPS's types, no smtrain settings.
    assert 'hyperparameters={"batch_size": 32, "epochs": 6, "model_dir": "s3://' in out
    assert "history epochs=[0, 1, 2, 3, 4, 5]" in out
    _chief_artifacts(host, out)
    assert _heldout_accuracy(host, digits) >= 0.9
    assert len((host.base / "output" / "data" / "epochs.csv").read_text().splitlines()) == 7  # header + 6
    # fit writes TensorBoard scalars where SageMaker's TensorBoardOutputConfig reads them (LocalPath).
    board = host.base / "output" / "tensorboard"
    assert [p.name for p in sorted(board.iterdir())] == ["train", "validation"]
    assert list((board / "train").glob("events.out.tfevents.*"))

    # The job restarted (a spot interruption) with two more epochs: it goes on from the checkpoint.
    again = _host(tmp_path, digits_npz, 8)
    hosts.append(again.start(script=code / "train.py", tag="-resumed"))
    _ok(again, again.wait(TIMEOUT))
    out = again.stdout()
    steps = 6 * ((len(digits["y_train"])) // 32)
    assert re.search(rf"^resumed from .*ckpt-{steps} at epoch 6 step {steps}$", out, re.M), out[-2000:]
    assert [parse_metrics(line)["epoch"] for line in metric_lines(out)] == ["7", "8"]
    assert "history epochs=[6, 7]" in out
    assert _heldout_accuracy(again, digits) >= 0.9


def test_mirrored_over_two_cpu_replicas(tmp_path: Path, code: Path, digits_npz, hosts: list[Host]) -> None:
    host = _host(tmp_path, digits_npz, 4)
    host.env["SMTRAIN_CPU_REPLICAS"] = "2"
    hosts.append(host.start(script=code / "train.py"))
    _ok(host, host.wait(TIMEOUT))
    out = host.stdout()
    config = parse_metrics(next(line for line in out.splitlines() if line.startswith("config ")))
    assert (config["strategy"], config["replicas"], config["global_batch_size"]) == ("mirrored", "2", "64")
    assert len(metric_lines(out)) == 4 and _val_accuracy(out) >= 0.85
    _chief_artifacts(host, out)


# --- several processes ----------------------------------------------------------------------------

def test_multi_worker_mirrored_two_processes(tmp_path: Path, code: Path, digits_npz, digits,
                                            hosts: list[Host]) -> None:
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    names = ["algo-1", "algo-2"]
    chief, worker = (_host(tmp_path, digits_npz, 3, name=name, names=names, tf_config=mwms_tf_config(addresses, i),
                           framework_params={"sagemaker_multi_worker_mirrored_strategy_enabled": True})
                     for i, name in enumerate(names))
    hosts.extend([chief.start(script=code / "train.py"), worker.start(script=code / "train.py")])
    _ok(chief, chief.wait(TIMEOUT))
    _ok(worker, worker.wait(TIMEOUT))
    assert "config strategy=multi_worker_mirrored replicas=2 workers=2" in chief.stdout()
    assert _digest(chief.stdout()) == _digest(worker.stdout())
    assert len(metric_lines(chief.stdout())) == 3 and not metric_lines(worker.stdout())
    assert _val_accuracy(chief.stdout()) >= 0.85
    _chief_artifacts(chief, chief.stdout())
    # The line's val_loss is the whole validation set's, over both workers (fit compiled the default accuracy in
    # under the strategy: Keras's loss tracker made outside it would be each worker's own mean).
    import tensorflow as tf

    saved = tf.keras.models.load_model(str(chief.model_dir / "model.keras"))
    logits = saved.predict(digits["x_val"], verbose=0)
    loss = float(tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(digits["y_val"], logits))
    assert float(parse_metrics(metric_lines(chief.stdout())[-1])["val_loss"]) == pytest.approx(loss, rel=2e-3)
    assert _saved(worker.stdout()) == [] and list(worker.model_dir.iterdir()) == []
    assert list(worker.checkpoint_dir.iterdir()) == [] and any(chief.checkpoint_dir.iterdir())


def test_parameter_server_chief_worker_and_ps(tmp_path: Path, code: Path, digits_npz, hosts: list[Host]) -> None:
    master, worker_address, ps_address = (f"127.0.0.1:{port}" for port in free_ports(3))

    def member(name: str, task: str, suffix: str = "") -> Host:
        made = _host(tmp_path, digits_npz, 3, name=name, names=["algo-1", "algo-2"], suffix=suffix,
                     tf_config=ps_tf_config(master, [worker_address], [ps_address], task, 0),
                     framework_params={"sagemaker_parameter_server_enabled": True})
        made.name += suffix
        return made

    chief, worker, ps = member("algo-1", "master"), member("algo-2", "worker"), member("algo-1", "ps", "-ps")
    chief.env["AS_DATASETS"] = "1"  # each worker rebuilds the chief's dataset from its graph
    hosts.extend([ps.start(script=code / "train.py"), worker.start(script=code / "train.py"),
                  chief.start(script=code / "train.py")])
    for each in (chief, worker, ps):
        _ok(each, each.wait(TIMEOUT))
    out = chief.stdout()
    assert "config strategy=parameter_server" in out
    assert [parse_metrics(line)["epoch"] for line in metric_lines(out)] == ["1", "2", "3"]
    assert _val_accuracy(out) >= 0.8
    _chief_artifacts(chief, out)
    for server in (worker, ps):
        # strategy() served until the chief was done and ended the process: the script went no further.
        assert "has finished; stopping" in server.stdout() and "history" not in server.stdout()


def _mpirun(python: Path, host: Host, script: Path) -> tuple[int, str]:
    return run_two_ranks(python, script, host.args, host.env, host.log_dir / "ranks", TIMEOUT)


@pytest.mark.horovod
def test_horovod_two_ranks_keras_2(tmp_path: Path, code: Path, digits_npz) -> None:
    python = required_horovod_python()
    host = _host(tmp_path, digits_npz, 6, framework_params={"sagemaker_mpi_enabled": True,
                                                            "sagemaker_mpi_num_of_processes_per_host": 2})
    # Two micro-batches per step: the ranks' gradients are averaged once per step, after both.
    host.env["SMTRAIN_GRADIENT_ACCUMULATION_STEPS"] = "2"
    code_run, out = _mpirun(python, host, code / "train.py")
    assert code_run == 0, out[-4000:]
    assert not host.failure_file.exists()
    first, second = (rank_output(host.log_dir / "ranks", rank, ("stdout", "stderr")) for rank in (0, 1))
    for text in (first, second):
        assert ("config strategy=horovod replicas=2 workers=2 batch_size_per_replica=32 global_batch_size=64 "
                "gradient_accumulation_steps=2 effective_batch_size=128") in text
    # Rank 0's weights are broadcast after the first step only: equal digests need every later step averaged.
    assert _digest(first) == _digest(second)
    assert len(metric_lines(first)) == 6 and not metric_lines(second)
    assert _val_accuracy(first) >= 0.85
    _chief_artifacts(host, first)
    assert _saved(second) == []


# --- misuse ------------------------------------------------------------------------------------------

MISUSE = '''
import numpy as np
import smtrain_tf

strategy = smtrain_tf.strategy()
import tensorflow as tf  # noqa: E402

x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = (x[:, 0] > 0).astype("int64")


def model():
    with strategy.scope():
        return tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])


outside = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
for call in (lambda: smtrain_tf.fit(outside, (x, y), batch_size_per_replica=8, loss="mse", optimizer="sgd"),
             lambda: smtrain_tf.fit(model(), (x, y), batch_size_per_replica=8),
             lambda: smtrain_tf.fit(model(), (x, y), batch_size_per_replica=8, loss="mse"),
             lambda: smtrain_tf.fit(model(), (x, y), optimizer="sgd", loss="mse",
                                    callbacks=[tf.keras.callbacks.LambdaCallback(), print]),
             lambda: smtrain_tf.fit(model(), (x, y), optimizer="sgd", loss="mse"),
             lambda: smtrain_tf.fit(model(), tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(8), loss="mse",
                                    optimizer="sgd")):
    try:
        call()
    except ValueError as exc:
        print("ValueError:", exc)

# An uncompiled model with both given trains; EarlyStopping ends it after two epochs.
stopper = tf.keras.callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=100)
history = smtrain_tf.fit(model(), (x, y), epochs=5, batch_size_per_replica=8, optimizer="sgd", checkpoint=False,
                         loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), callbacks=[stopper])
print("stopped after", history.epoch)
'''


def test_misuse_is_refused_with_a_clear_message(tmp_path: Path, code: Path) -> None:
    (code / "misuse.py").write_text(MISUSE)
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels={}, hyperparameters={})
    host.env["SMTRAIN_CPU_REPLICAS"] = "2"
    code_run = host.start(script=code / "misuse.py").wait(TIMEOUT)
    out = host.stdout()
    assert code_run == 0, out[-2000:] + host.stderr()[-3000:]
    errors = [line for line in out.splitlines() if line.startswith("ValueError: ")]
    assert errors.pop(0) == ("ValueError: smtrain_tf.fit: the model's variables were not created under the job's "
                             "strategy (mirrored): build and compile the model inside `with "
                             "smtrain_tf.strategy().scope():`")
    assert errors[0] == ("ValueError: smtrain_tf.fit needs a loss and an optimizer: compile the model first "
                         "(model.compile(optimizer=..., loss=...)) or pass loss=... and optimizer=...")
    assert errors[1] == ("ValueError: smtrain_tf.fit needs an optimizer: compile the model first "
                         "(model.compile(optimizer=..., loss=...)) or pass optimizer=...")
    assert ("smtrain_tf.fit: callbacks must be Keras callbacks (keras.callbacks.Callback), not "
            "builtin_function_or_method") in errors[2]
    assert errors[3] == "ValueError: smtrain_tf.fit: train is a pair of arrays: pass batch_size_per_replica"
    assert "length of the training data is unknown or infinite (batches): pass steps_per_epoch" in errors[4]
    assert len(errors) == 5
    assert "stopped after [0, 1]" in out
    assert len(metric_lines(out)) == 2 and not host.failure_file.exists()


# --- Keras's own fit: the model's own train_step, the optimizer's accumulation, a mid-epoch resume -------------------

# keras.io's "customizing what happens in fit" form: a train_step of the model's own, metrics it tracks itself, a
# compile with no loss. STEP picks the run: the custom model on 2 replicas; plain Dense models for accumulation
# (k micro-batches on 2 replicas against one batch k x 2 times larger on one device); an interrupted run and its
# restart from a checkpoint taken mid-epoch.
KERAS_SCRIPT = '''
import os

import numpy as np
import smtrain_tf

strategy = smtrain_tf.strategy()
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

run = os.environ["RUN"]
rng = np.random.default_rng(3)
x = rng.normal(size=(96, 6)).astype("float32")
y = (x @ rng.normal(size=(6, 1))).astype("float32")


class CustomModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.loss_tracker = keras.metrics.Mean(name="own_loss")
        self.steps_seen = keras.metrics.Sum(name="own_steps")

    def call(self, inputs):
        return self.dense(inputs)

    def train_step(self, data):
        features, labels = data
        with tf.GradientTape() as tape:
            predicted = self(features, training=True)
            loss = keras.losses.MeanSquaredError()(labels, predicted)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        self.loss_tracker.update_state(loss)
        self.steps_seen.update_state(1.0)
        return {"own_loss": self.loss_tracker.result(), "own_steps": self.steps_seen.result()}

    @property
    def metrics(self):
        return [self.loss_tracker, self.steps_seen]


keras.utils.set_random_seed(5)
with strategy.scope():
    if run == "own_step":
        model = CustomModel()
        model.compile(optimizer=keras.optimizers.SGD(0.05))
    else:
        model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(0.2), loss="mse")
arguments = {"own_step": dict(epochs=2, batch_size_per_replica=8),
             "accumulated": dict(epochs=1, batch_size_per_replica=8, steps_per_epoch=3, gradient_accumulation_steps=2),
             "one_device": dict(epochs=1, batch_size_per_replica=32, steps_per_epoch=3),
             "interrupted": dict(epochs=2, batch_size_per_replica=8),
             "restarted": dict(epochs=2, batch_size_per_replica=8)}[run]


class Interruption(keras.callbacks.Callback):
    """A spot interruption in the first epoch, after the checkpoint of step 4."""

    def on_train_batch_begin(self, batch, logs=None):
        if batch == 4:
            raise SystemExit(3)


callbacks = [Interruption()] if run == "interrupted" else []
history = smtrain_tf.fit(model, (x, y), callbacks=callbacks, **arguments)
print("history", sorted(history.history), history.epoch)
np.savez(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], "weights.npz"), *model.get_weights())
'''


def _keras_run(tmp_path: Path, code: Path, run: str, *, replicas: int = 1, name: str = "",
               env: dict[str, str] | None = None) -> Host:
    (code / "keras_fit.py").write_text(KERAS_SCRIPT)
    host = make_host(tmp_path / (name or run), "algo-1", ["algo-1"], channels={}, hyperparameters={})
    host.env.update({"RUN": run, "SMTRAIN_CPU_REPLICAS": str(replicas), **(env or {})})
    host.start(script=code / "keras_fit.py").wait(TIMEOUT)
    return host


def _weights(host: Host) -> list[np.ndarray]:
    with np.load(host.base / "output" / "data" / "weights.npz") as found:
        return [found[f"arr_{i}"] for i in range(len(found.files))]


def test_fit_runs_the_models_own_train_step_under_mirrored(tmp_path: Path, code: Path) -> None:
    host = _keras_run(tmp_path, code, "own_step", replicas=2)
    out = host.stdout()
    assert not host.failure_file.exists(), out[-2000:] + host.stderr()[-3000:]
    # No compiled loss: the model's own step makes and names its metrics; 96 examples at 16 a step: 6 steps an epoch.
    lines = [parse_metrics(line) for line in metric_lines(out)]
    assert [line["epoch"] for line in lines] == ["1", "2"] and "loss" not in lines[0]
    assert [float(line["own_steps"]) for line in lines] == [12.0, 12.0]  # each replica's step counted, per epoch
    assert "history ['own_loss', 'own_steps'] [0, 1]" in out
    assert "loop=keras_fit" in out


def test_the_optimizers_own_accumulation_on_two_replicas_is_one_device_on_the_whole_batch(tmp_path: Path,
                                                                                          code: Path) -> None:
    accumulated = _keras_run(tmp_path, code, "accumulated", replicas=2)
    one = _keras_run(tmp_path, code, "one_device")
    for host in (accumulated, one):
        assert not host.failure_file.exists(), host.stdout()[-2000:] + host.stderr()[-3000:]
    assert ("gradient_accumulation_steps=2 effective_batch_size=32 steps_per_epoch=3"
            in accumulated.stdout()), accumulated.stdout()[-2000:]
    # Three updates, each on 2 micro-batches of 16 over 2 replicas, against three of 32 on one device.
    # Keras's optimizer counts updates (iterations: its micro-steps // 2).
    assert [parse_metrics(line)["step"] for line in metric_lines(accumulated.stdout())] == ["3"]
    for mine, theirs in zip(_weights(accumulated), _weights(one), strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)


def test_a_restart_after_a_mid_epoch_checkpoint_runs_the_rest_of_that_epoch_only(tmp_path: Path, code: Path) -> None:
    every = {"SMTRAIN_CHECKPOINT_EVERY_STEPS": "4"}
    first = _keras_run(tmp_path, code, "interrupted", env=every)
    assert first.process.returncode == 3, first.stdout()[-2000:] + first.stderr()[-3000:]
    assert re.search(r"^checkpoint saved .*ckpt-4 epoch=0 step=4$", first.stdout(), re.M), first.stdout()[-2000:]
    again = make_host(tmp_path / "interrupted", "algo-1", ["algo-1"], channels={}, hyperparameters={})
    again.env.update({"RUN": "restarted", "SMTRAIN_CPU_REPLICAS": "1", **every})
    again.start(script=code / "keras_fit.py", tag="-restarted").wait(TIMEOUT)
    out = again.stdout()
    assert not again.failure_file.exists(), out[-2000:] + again.stderr()[-3000:]
    # 96 examples at 8: 12 steps an epoch; the restart does steps 5-12 of the first epoch, then the second whole.
    assert re.search(r"^resumed from .*ckpt-4 at epoch 0 step 4$", out, re.M), out[-2000:]
    assert [parse_metrics(line)["step"] for line in metric_lines(out)] == ["12", "24"]
    assert "training finished epochs=2 steps=24" in out and "history ['loss'] [0, 1]" in out
