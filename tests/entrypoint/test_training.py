"""The entrypoint end to end: real TensorFlow on the CPU, run as SageMaker's container runs it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from .conftest import ENTRYPOINTS, write_csv, write_npz, write_tfrecord
from .sagemaker_env import Host, free_ports, make_host, metric_lines, mwms_tf_config, parse_metrics, ps_tf_config

pytestmark = pytest.mark.slow

TIMEOUT = 240
METRIC_DEFINITIONS = Path(ENTRYPOINTS) / "smtrain_tf" / "metric_definitions.json"


def _finish(host: Host, timeout: float = TIMEOUT) -> int:
    return host.wait(timeout)


def _assert_ok(host: Host, code: int) -> None:
    assert code == 0, f"{host.name} exited {code}\nstdout:\n{host.stdout()[-3000:]}\nstderr:\n{host.stderr()[-3000:]}"
    assert not host.failure_file.exists()


def _assert_clean_failure(host: Host, code: int, reason: str) -> str:
    assert code != 0, host.stdout()[-2000:]
    text = host.failure_file.read_text()
    assert re.search(reason, text), text
    assert text.count("\n") == 1
    assert "Traceback" not in host.stderr(), host.stderr()[-3000:]
    return text


def _heldout_accuracy(saved_model: Path, x: np.ndarray, y: np.ndarray) -> float:
    import tensorflow as tf

    serve = tf.saved_model.load(str(saved_model)).signatures["serving_default"]
    outputs = serve(x=tf.constant(x))
    assert outputs["probabilities"].shape == (len(x), 10)
    return float(np.mean(outputs["classes"].numpy() == y))


# --- one process ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def single_run(tmp_path_factory: pytest.TempPathFactory, digits_npz: dict[str, Path]) -> Host:
    """Default strategy on digits; its output serves several tests."""
    root = tmp_path_factory.mktemp("single")
    host = make_host(root, "algo-1", ["algo-1"], channels=digits_npz,
                     hyperparameters={"epochs": 12, "batch_size_per_replica": 32, "learning_rate": 0.002})
    code = host.start().wait(TIMEOUT)
    _assert_ok(host, code)
    return host


def test_single_process_reaches_95_percent_on_held_out_digits(single_run: Host, digits) -> None:
    assert "config strategy=default replicas=1" in single_run.stdout()
    lines = metric_lines(single_run.stdout())
    assert [int(parse_metrics(line)["epoch"]) for line in lines] == list(range(1, 13))
    assert float(parse_metrics(lines[-1])["val_accuracy"]) >= 0.95
    summary = json.loads((single_run.base / "output" / "data" / "training_summary.json").read_text())
    assert (summary["strategy"], summary["epochs"], summary["global_batch_size"]) == ("default", 12, 32)
    assert _heldout_accuracy(single_run.model_dir / "1", digits["x_val"], digits["y_val"]) >= 0.95


def test_artifacts_are_a_servable_saved_model_and_a_keras_file(single_run: Host, digits) -> None:
    import tensorflow as tf

    assert (single_run.model_dir / "1" / "saved_model.pb").is_file()
    model = tf.keras.models.load_model(str(single_run.model_dir / "model.keras"))
    logits = model.predict(digits["x_val"][:50], verbose=0)
    assert np.mean(logits.argmax(axis=1) == digits["y_val"][:50]) > 0.9
    assert sorted(p.name for p in single_run.model_dir.iterdir()) == ["1", "model.keras"]


def test_metric_definitions_match_the_real_metric_lines(single_run: Host) -> None:
    definitions = json.loads(METRIC_DEFINITIONS.read_text())
    lines = metric_lines(single_run.stdout())
    keys = {"train:loss": "loss", "train:accuracy": "accuracy", "validation:loss": "val_loss",
            "validation:accuracy": "val_accuracy", "train:learning_rate": "lr",
            "train:examples_per_sec": "examples_per_sec", "train:epoch": "epoch"}
    # train:fit reads the fit call's number, which a process's first fit call (this one) leaves out.
    assert {d["Name"] for d in definitions} == {*keys, "train:fit"}
    for definition in definitions:
        if definition["Name"] == "train:fit":
            assert not any(re.search(definition["Regex"], line) for line in lines)
            continue
        regex = re.compile(definition["Regex"])
        for line in lines:
            match = regex.search(line)
            assert match, (definition, line)
            assert float(match.group(1)) == float(parse_metrics(line)[keys[definition["Name"]]])
    other = [line for line in single_run.stdout().splitlines() if line not in lines]
    assert not any(re.search(d["Regex"], line) for d in definitions for line in other
                   if d["Name"].startswith("validation"))


# --- several replicas, several processes -----------------------------------------------------------

def test_mirrored_over_two_logical_cpus(tmp_path: Path, digits, hosts: list[Host]) -> None:
    channels = {"train": write_tfrecord(tmp_path / "data" / "train", digits["x_train"], digits["y_train"], parts=3)}
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels=channels,
                     hyperparameters={"epochs": 2, "batch_size_per_replica": 24, "cpu_replicas": 2,
                                      "mixed_precision": "on", "steps_per_execution": 8})
    hosts.append(host.start())
    _assert_ok(host, _finish(host))
    config = parse_metrics(next(line for line in host.stdout().splitlines() if line.startswith("config ")))
    assert (config["strategy"], config["replicas"], config["global_batch_size"]) == ("mirrored", "2", "48")
    assert config["mixed_precision"] == "on"
    assert config["steps_per_epoch"] == str(len(digits["y_train"]) // 48)
    assert config["learning_rate"] == "0.002"  # linear scaling: 0.001 x 2 replicas
    assert len(metric_lines(host.stdout())) == 2


def _mwms_hosts(root: Path, channels: dict[str, Path], hyperparameters: dict, addresses: list[str]) -> list[Host]:
    names = ["algo-1", "algo-2"]
    return [make_host(root, name, names, channels=channels, hyperparameters=hyperparameters,
                      tf_config=mwms_tf_config(addresses, i),
                      framework_params={"sagemaker_multi_worker_mirrored_strategy_enabled": True})
            for i, name in enumerate(names)]


def _digest(host: Host) -> str:
    found = re.findall(r"^weights_sha256=([0-9a-f]{64})$", host.stdout(), re.M)
    assert len(found) == 1, host.stdout()[-2000:]
    return found[0]


def test_multi_worker_mirrored_two_processes(tmp_path: Path, digits, hosts: list[Host]) -> None:
    import tensorflow as tf

    # Flat examples (no `shape` feature), like the CSV rows of the validation channel.
    channels = {"train": write_tfrecord(tmp_path / "data" / "train", digits["x_train"], digits["y_train"], parts=2,
                                        with_shape=False),
                "validation": write_csv(tmp_path / "data" / "validation", digits["x_val"], digits["y_val"])}
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    hps = {"epochs": 3, "batch_size_per_replica": 32, "learning_rate": 0.003}
    chief, worker = _mwms_hosts(tmp_path, channels, hps, addresses)
    hosts.extend([chief.start(), worker.start()])
    _assert_ok(chief, _finish(chief))
    _assert_ok(worker, _finish(worker))
    assert "strategy=multi_worker_mirrored replicas=2 workers=2" in chief.stdout()
    assert _digest(chief) == _digest(worker)
    assert len(metric_lines(chief.stdout())) == 3 and not metric_lines(worker.stdout())
    assert list(worker.model_dir.iterdir()) == [] and list(worker.checkpoint_dir.iterdir()) == []
    assert (chief.model_dir / "model.keras").is_file()
    serve = tf.saved_model.load(str(chief.model_dir / "1")).signatures["serving_default"]
    classes = serve(x=tf.constant(digits["x_val"].reshape(-1, 64)))["classes"].numpy()
    assert np.mean(classes == digits["y_val"]) > 0.85

    # One more epoch: the chief resumes from its checkpoint; the worker, which has none, takes the chief's state.
    chief, worker = _mwms_hosts(tmp_path, channels, {**hps, "epochs": 4}, addresses)
    hosts.extend([chief.start(tag="-resume"), worker.start(tag="-resume")])
    _assert_ok(chief, _finish(chief))
    _assert_ok(worker, _finish(worker))
    steps = 3 * (len(digits["y_train"]) // 64)
    assert re.search(rf"^resumed from .*ckpt-{steps} at epoch 3 step {steps}$", chief.stdout(), re.M)
    assert f"continuing with the chief's state at epoch 3 step {steps}" in worker.stdout()
    assert [parse_metrics(line)["epoch"] for line in metric_lines(chief.stdout())] == ["4"]
    assert _digest(chief) == _digest(worker)


def test_parameter_server_chief_worker_and_ps(tmp_path: Path, digits_npz: dict[str, Path],
                                              hosts: list[Host]) -> None:
    master, worker_address, ps_address = (f"127.0.0.1:{port}" for port in free_ports(3))
    names = ["algo-1", "algo-2"]
    hps = {"epochs": 2, "batch_size_per_replica": 32, "steps_per_execution": 10}
    framework = {"sagemaker_parameter_server_enabled": True}

    def host(name: str, task: str, suffix: str = "") -> Host:
        config = ps_tf_config(master, [worker_address], [ps_address], task, 0)
        made = make_host(tmp_path, name, names, channels=digits_npz, hyperparameters=hps, tf_config=config,
                         framework_params=framework, suffix=suffix)
        made.name += suffix
        return made

    chief, worker, ps = host("algo-1", "master"), host("algo-2", "worker"), host("algo-1", "ps", "-ps")
    hosts.extend([ps.start(), worker.start(), chief.start()])
    for member in (chief, worker, ps):
        _assert_ok(member, _finish(member))
    assert "config strategy=parameter_server" in chief.stdout()
    assert [parse_metrics(line)["epoch"] for line in metric_lines(chief.stdout())] == ["1", "2"]
    for server in (worker, ps):
        assert "has finished; stopping" in server.stdout()
    assert (chief.model_dir / "1" / "saved_model.pb").is_file()


# --- spot interruption --------------------------------------------------------------------------

def test_kill_nine_then_resume_from_the_checkpoint(tmp_path: Path, digits_npz: dict[str, Path],
                                                   hosts: list[Host]) -> None:
    epochs, per_epoch = 30, len(np.load(digits_npz["train"] / "part-0.npz")["y"]) // 64
    hps = {"epochs": epochs, "checkpoint_every_steps": 7, "steps_per_execution": 7}
    first = make_host(tmp_path, "algo-1", ["algo-1"], channels=digits_npz, hyperparameters=hps)
    hosts.append(first.start(tag="-killed"))
    first.wait_for_output("epoch=3 ", TIMEOUT)
    first.kill()
    assert "training finished" not in first.stdout()

    again = make_host(tmp_path, "algo-1", ["algo-1"], channels=digits_npz, hyperparameters=hps)
    hosts.append(again.start(tag="-resumed"))
    _assert_ok(again, _finish(again))
    resumed = re.search(r"^resumed from (\S+) at epoch (\d+) step (\d+)$", again.stdout(), re.M)
    assert resumed, again.stdout()[:2000]
    path, epoch, step = resumed.group(1), int(resumed.group(2)), int(resumed.group(3))
    assert path.startswith(str(again.checkpoint_dir)) and path.endswith(f"ckpt-{step}")
    # "epoch=3" was printed before epoch 3's own checkpoint, so the kill may land before or during
    # that save: the newest complete checkpoint is then a mid-epoch one (every 7 steps).
    assert step >= 2 * per_epoch and (step % 7 == 0 or step % per_epoch == 0)
    assert epoch == step // per_epoch
    epochs_seen = [int(parse_metrics(line)["epoch"]) for line in metric_lines(again.stdout())]
    assert epochs_seen == list(range(epoch + 1, epochs + 1))
    assert parse_metrics(metric_lines(again.stdout())[-1])["step"] == str(epochs * per_epoch)
    assert f"training finished epochs={epochs} steps={epochs * per_epoch}" in again.stdout()


# --- failures ------------------------------------------------------------------------------------

def test_nan_loss_stops_with_a_reason(tmp_path: Path, digits_npz: dict[str, Path], hosts: list[Host]) -> None:
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels=digits_npz,
                     hyperparameters={"epochs": 3, "optimizer": "sgd", "learning_rate": 1e9})
    hosts.append(host.start())
    _assert_clean_failure(host, _finish(host), r"^training stopped: the loss became (NaN|infinite) at epoch 1")
    assert list(host.model_dir.iterdir()) == []


def test_missing_train_channel(tmp_path: Path, digits_npz: dict[str, Path], hosts: list[Host]) -> None:
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels={"validation": digits_npz["validation"]},
                     hyperparameters={"epochs": 1})
    hosts.append(host.start())
    _assert_clean_failure(host, _finish(host, 60), r"no 'train' channel \(channels given: validation\)")


def test_unknown_model(tmp_path: Path, digits_npz: dict[str, Path], hosts: list[Host]) -> None:
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels=digits_npz, hyperparameters={"model": "vgg-19"})
    hosts.append(host.start())
    _assert_clean_failure(host, _finish(host, 60), r"unknown model 'vgg-19': use one of mlp, cnn, resnet50")


def test_malformed_channel_names_the_file(tmp_path: Path, digits, hosts: list[Host]) -> None:
    train = write_npz(tmp_path / "data" / "train", digits["x_train"], digits["y_train"], parts=2)
    (train / "part-1.npz").write_bytes(b"PK\x03\x04 truncated")
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels={"train": train}, hyperparameters={"epochs": 1})
    hosts.append(host.start())
    _assert_clean_failure(host, _finish(host), r"part-1\.npz: not a readable NPZ file")


# --- user model hook ----------------------------------------------------------------------------

HOOK = '''
import tensorflow as tf


def build_model(input_shape, num_classes, hyperparameters):
    width = int(hyperparameters["width"])
    print(f"hook called with input_shape={input_shape} num_classes={num_classes} width={width}", flush=True)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=input_shape),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(width, activation="relu"),
        tf.keras.layers.Dense(num_classes, activation="softmax"),
    ])
    return {"model": model, "optimizer": tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)}
'''


def test_user_model_hook(tmp_path: Path, digits_npz: dict[str, Path], hosts: list[Host]) -> None:
    # SageMaker's code directory holds the bundled entrypoint and the user's modules side by side.
    code = tmp_path / "code"
    shutil.copytree(ENTRYPOINTS, code, ignore=shutil.ignore_patterns("__pycache__", "README.md"))
    (code / "my_models.py").write_text(HOOK)
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels=digits_npz,
                     hyperparameters={"model": "my_models:build_model", "width": 48, "epochs": 4, "xla": True})
    hosts.append(host.start(script=code / "smtrain_entry.py"))
    _assert_ok(host, _finish(host))
    out = host.stdout()
    assert "hook called with input_shape=(8, 8) num_classes=10 width=48" in out
    assert "model=my_models:build_model" in out and "xla=on" in out
    assert float(parse_metrics(metric_lines(out)[-1])["val_accuracy"]) > 0.9
    assert (host.model_dir / "1" / "saved_model.pb").is_file()



# A model hook's model with a train_step of its own (keras.io's "customizing what happens in fit" form): the bundled
# program trains through Keras's fit, so that step runs, on every replica, with the program's compiled loss.
OWN_STEP_HOOK = '''
import keras
import tensorflow as tf


class Counting(keras.Model):
    def __init__(self, num_classes):
        super().__init__()
        self.flat = keras.layers.Flatten()
        self.hidden = keras.layers.Dense(32, activation="relu")
        self.logits = keras.layers.Dense(num_classes)
        self.steps_seen = keras.metrics.Sum(name="own_steps")

    def call(self, inputs):
        return self.logits(self.hidden(self.flat(inputs)))

    def train_step(self, data):
        features, labels = data
        with tf.GradientTape() as tape:
            predicted = self(features, training=True)
            loss = self.compute_loss(x=features, y=labels, y_pred=predicted)
        self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)
        self.steps_seen.update_state(1.0)
        return {"loss": loss, "own_steps": self.steps_seen.result()}


def build_model(input_shape, num_classes, hyperparameters):
    model = Counting(num_classes)
    model(tf.zeros((1, *input_shape)))
    return {"model": model}
'''


def test_a_model_hooks_own_train_step_runs_on_every_replica(tmp_path: Path, digits_npz: dict[str, Path],
                                                            hosts: list[Host]) -> None:
    code = tmp_path / "code"
    shutil.copytree(ENTRYPOINTS, code, ignore=shutil.ignore_patterns("__pycache__", "README.md"))
    (code / "own_step.py").write_text(OWN_STEP_HOOK)
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels=digits_npz,
                     hyperparameters={"model": "own_step:build_model", "epochs": 2, "batch_size_per_replica": 32})
    host.env["SMTRAIN_CPU_REPLICAS"] = "2"
    hosts.append(host.start(script=code / "smtrain_entry.py"))
    _assert_ok(host, _finish(host))
    out = host.stdout()
    assert "strategy=mirrored replicas=2" in out and "loop=keras_fit" in out
    # 1437 examples at 64 a step: 22 steps an epoch, counted by the step itself on each replica (Keras resets the
    # model's metrics at each epoch, and reports a step's own value as the replicas' mean).
    lines = [parse_metrics(line) for line in metric_lines(out)]
    assert [line["step"] for line in lines] == ["22", "44"]
    assert [float(line["own_steps"]) for line in lines] == [22.0, 22.0]
    assert float(lines[-1]["loss"]) < float(lines[0]["loss"])
