"""Scripts written as every tutorial writes them, run unchanged by the wrap.

They build their own `tf.distribute.MirroredStrategy()`, print its replica count, write their
global batch as `per_replica * strategy.num_replicas_in_sync`, compile under `strategy.scope()` and
call `fit` with Keras's default progress bar. Under the wrap the script's strategy is the wrap's,
its batch stays global as written, and smtrain's metric line is a line of its own after the bar.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from .sagemaker_env import Host, parse_metrics
from .test_wrap import TIMEOUT, _assert_ok, _code_dir, _context, _digests, _mwms_pair, _wrapped

TUTORIAL = """
import argparse
import os

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--model_dir")
args = parser.parse_args()

strategy = tf.distribute.MirroredStrategy()
print("Number of devices: {}".format(strategy.num_replicas_in_sync))
GLOBAL_BATCH = args.batch_size * strategy.num_replicas_in_sync

data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "part-0.npz"))
x, y = data["x"].reshape(len(data["x"]), -1), data["y"]
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(32, activation="relu"),
                                 tf.keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, epochs=args.epochs, batch_size=GLOBAL_BATCH, validation_split=0.2)
model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))
"""
HYPERPARAMETERS = {"epochs": 2, "batch-size": 32}
STRATEGY_LINE = TUTORIAL.lstrip().splitlines().index("strategy = tf.distribute.MirroredStrategy()") + 1


def _raw(host: Host) -> str:
    """The host's stdout as written: read_text() would turn a progress bar's carriage returns into newlines."""
    return host.stdout_path.read_bytes().decode("utf-8", errors="replace")


def _physical_metric_lines(stdout: str) -> list[dict[str, str]]:
    """smtrain's metric lines that start a line of the output as written (newlines only, as CloudWatch splits)."""
    return [parse_metrics(line) for line in stdout.split("\n") if line.startswith("epoch=")]


@pytest.mark.slow
def test_a_tutorial_script_with_its_own_mirrored_strategy_trains_on_two_replicas(tmp_path: Path, digits_npz, digits,
                                                                                 hosts: list[Host]) -> None:
    host, wrap = _wrapped(tmp_path, digits_npz, TUTORIAL, env={"SMTRAIN_CPU_REPLICAS": "2"},
                          hyperparameters=HYPERPARAMETERS)
    hosts.append(host.start(script=wrap))
    _assert_ok(host, host.wait(TIMEOUT))
    out = host.stdout()
    assert "wrap: strategy=mirrored replicas=2 workers=1 chief=yes script=train.py" in out
    assert (f"wrap: train.py:{STRATEGY_LINE}: tf.distribute.MirroredStrategy() is the wrap's mirrored strategy "
            "(1 worker(s), 2 replica(s) in all)") in out
    assert "Number of devices: 2" in out
    # The script wrote its global batch itself: the wrap keeps it (32 per replica), not 64 x 2.
    assert "wrap: batch_size 64 is global (the script multiplied it by num_replicas_in_sync): 32 per replica" in out
    assert "per replica -> global" not in out
    # Keras's progress bar drew each epoch (carriage returns), and every epoch's metric line still starts a line.
    raw = _raw(host)
    assert "\r" in raw and "\b" in raw
    lines = _physical_metric_lines(raw)
    rows = int(np.ceil(len(digits["y_train"]) * 0.8))
    assert [(line["epoch"], int(line["step"])) for line in lines] == [("1", -(-rows // 64)), ("2", 2 * -(-rows // 64))]
    assert sorted(p.name for p in host.model_dir.iterdir()) == ["model.keras"]


@pytest.mark.slow
def test_the_same_script_on_two_hosts_trains_under_the_wraps_multi_worker_strategy(tmp_path: Path, digits_npz,
                                                                                   hosts: list[Host]) -> None:
    members = _mwms_pair(tmp_path, _code_dir(tmp_path, TUTORIAL), digits_npz, HYPERPARAMETERS, hosts)
    chief, worker = members
    _assert_ok(chief, chief.wait(TIMEOUT))
    _assert_ok(worker, worker.wait(TIMEOUT))
    for member in members:
        out = member.stdout()
        assert (f"wrap: train.py:{STRATEGY_LINE}: tf.distribute.MirroredStrategy() is the wrap's multi_worker_mirrored "
                "strategy (2 worker(s), 2 replica(s) in all)") in out
        assert "Number of devices: 2" in out
        assert "wrap: batch_size 64 is global (the script multiplied it by num_replicas_in_sync)" in out
    assert [line["epoch"] for line in _physical_metric_lines(_raw(chief))] == ["1", "2"]
    # One model, identical weights on both hosts; the worker's own save was removed when its script ended.
    assert _digests(chief) and _digests(chief) == _digests(worker)
    assert sorted(p.name for p in chief.model_dir.iterdir()) == ["model.keras"]
    assert list(worker.model_dir.iterdir()) == []
    assert "smtrain-worker-saves-" in worker.stdout()
    assert not list(worker.base.glob("smtrain-worker-saves-*"))


def test_the_scripts_strategy_is_the_wraps_and_explicit_devices_are_refused_at_their_line() -> None:
    import tensorflow as tf
    from smtrain_tf.wrap import own_strategy
    from smtrain_tf.wrap.context import Unsupported

    said: list[str] = []
    ctx = _context("per_replica", said)
    real = tf.distribute.get_strategy()
    ctx.dist.strategy, ctx.dist.num_workers = real, 1
    stand_in = own_strategy._stand_in(tf.distribute.MirroredStrategy, ctx)
    assert stand_in() is real
    assert stand_in(cross_device_ops=tf.distribute.HierarchicalCopyAllReduce()) is real
    assert any("cross_device_ops=...) is not used" in line for line in said), said
    assert any(re.search(r"^wrap: \S+:\d+: tf.distribute.MirroredStrategy\(\) is the wrap's mirrored strategy", line)
               for line in said), said
    with pytest.raises(Unsupported, match=r"MirroredStrategy\(devices=...\): the wrap runs the script under the job's "
                                          r"mirrored strategy .* call tf.distribute.MirroredStrategy\(\) without devices"):
        stand_in(["/cpu:0"])
    mwms = own_strategy._stand_in(tf.distribute.MultiWorkerMirroredStrategy, ctx)
    with pytest.raises(Unsupported, match=r"MultiWorkerMirroredStrategy\(cluster_resolver=...\)"):
        mwms(cluster_resolver=object())
    # isinstance keeps TensorFlow's answer: the default strategy is no MirroredStrategy, a real one is.
    assert not isinstance(real, stand_in)
    assert issubclass(tf.distribute.MirroredStrategy, stand_in)


def test_a_batch_multiplied_by_the_replica_count_is_marked_global(monkeypatch) -> None:
    import pickle

    import yaml
    from smtrain_tf.distribute.replica_count import ReplicaCount, _State, scaled_by_script

    monkeypatch.setattr(_State, "scaled", set())
    replicas = ReplicaCount(4)
    batch = 32 * replicas
    assert batch == 128 and type(batch) is int and scaled_by_script(batch) and scaled_by_script(replicas * 16)
    # the script's own numbers stay plain: saved, printed, serialised as ever
    assert yaml.safe_dump({"batch": batch}) == "batch: 128\n" and pickle.loads(pickle.dumps(replicas)) == 4
    assert type(pickle.loads(pickle.dumps(replicas))) is int
    assert not scaled_by_script(32) and not scaled_by_script(replicas + 1) and not scaled_by_script(True)


def test_a_line_said_after_a_progress_bar_starts_a_line_of_its_own(capsys) -> None:
    import sys

    from smtrain_tf.contract import log

    saved = sys.stdout
    try:
        log.track_lines()
        log.track_lines()  # once only
        assert isinstance(sys.stdout, log.LineTracking) and not isinstance(sys.stdout._stream, log.LineTracking)
        sys.stdout.write("\r 1/9 [==>....] - loss: 0.5\b\b\b\r 9/9 [=======] - loss: 0.4")
        log.say("epoch=1 step=9 loss=0.4")
        log.say("epoch=2 step=18 loss=0.3")
        print("done")
    finally:
        sys.stdout = saved
    assert capsys.readouterr().out.split("\n") == [
        "\r 1/9 [==>....] - loss: 0.5\b\b\b\r 9/9 [=======] - loss: 0.4", "epoch=1 step=9 loss=0.4",
        "epoch=2 step=18 loss=0.3", "done", ""]


def test_the_wrap_package_map_names_the_own_strategy_module() -> None:
    from .conftest import ENTRYPOINTS

    doc = (Path(ENTRYPOINTS) / "smtrain_tf" / "wrap" / "__init__.py").read_text()
    assert "own_strategy.py" in doc



def test_a_dataset_batched_with_a_global_batch_gets_no_advice_to_multiply_it(monkeypatch) -> None:
    import tensorflow as tf
    from smtrain_tf.distribute import replica_count
    from smtrain_tf.wrap.batch_size import batched_data_warning

    said: list[str] = []
    ctx = _context("per_replica", said)
    batched_data_warning(ctx, "train.py:7", "a tf.data.Dataset")
    # The number may be one replica's or already global (a per-worker batch times the workers): both are said.
    assert said[-1].endswith("split over 2 replicas (if the script's batch size is one replica's, multiply it by "
                             "strategy.num_replicas_in_sync; if it is already the whole job's, nothing to do)")
    monkeypatch.setattr(tf.data.Dataset, "batch", tf.data.Dataset.batch)  # put back after the test
    monkeypatch.setattr(replica_count._State, "scaled_dataset_batch", False)
    replica_count._mark_dataset_batch()
    tf.data.Dataset.range(8).batch(4)
    assert not replica_count.dataset_batch_scaled()
    monkeypatch.setattr(replica_count._State, "scaled", set())
    batches = tf.data.Dataset.range(8).batch(2 * replica_count.ReplicaCount(2))
    assert replica_count.dataset_batch_scaled() and next(iter(batches)).shape == (4,)
    batched_data_warning(ctx, "train.py:9", "a tf.data.Dataset")
    assert said[-1] == ("wrap: train.py:9: fit gets a tf.data.Dataset, which the script batches itself with a global "
                        "batch (it multiplied by num_replicas_in_sync): each batch is split over 2 replicas")


def test_a_warning_keras_logs_at_every_save_is_shown_once(caplog) -> None:
    import logging

    from smtrain_tf.wrap import repeated_warnings

    logger = logging.getLogger("absl")
    saved = list(logger.filters)
    try:
        repeated_warnings.show_once()
        repeated_warnings.show_once()  # one filter, however often
        with caplog.at_level(logging.INFO, logger="absl"):
            for _ in range(3):
                logger.warning("You are saving your model as an HDF5 file via `model.save()`.")
            logger.warning("another warning")
            logger.warning("another warning")
        assert [r.getMessage() for r in caplog.records] == [
            "You are saving your model as an HDF5 file via `model.save()`.", "another warning", "another warning"]
    finally:
        logger.filters[:] = saved


ANSWERS = """
import json, sys
from types import SimpleNamespace

import tensorflow as tf
from smtrain_tf.wrap import own_strategy

def answers(strategy):
    resolver = strategy.cluster_resolver
    return {"resolver": type(resolver).__name__, "task_type": resolver.task_type, "task_id": resolver.task_id,
            "cluster": resolver.cluster_spec().as_dict(), "should_checkpoint": strategy.extended.should_checkpoint,
            "should_save_summary": strategy.extended.should_save_summary,
            "between_graph": strategy.extended.experimental_between_graph,
            "is_mwms": isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy),
            "is_strategy": isinstance(strategy, tf.distribute.Strategy)}

if sys.argv[1] == "tensorflow":
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # TensorFlow's own, on one host
    names = sorted(n for n in dir(strategy) if not n.startswith("_"))
    extended = sorted(n for n in dir(strategy.extended) if not n.startswith("_"))
    print(json.dumps({"answers": answers(strategy), "names": names, "extended": extended}))
else:
    real = tf.distribute.MirroredStrategy()  # the wrap's, on one host
    ctx = SimpleNamespace(kind="mirrored", replicas=1, dist=SimpleNamespace(strategy=real, num_workers=1),
                          settings=SimpleNamespace(script_dir="."), say_once=lambda line: None)
    strategy = own_strategy._stand_in(tf.distribute.MultiWorkerMirroredStrategy, ctx)()
    missing = [n for n in json.loads(sys.argv[2])["names"] if not hasattr(strategy, n)]
    missing += ["extended." + n for n in json.loads(sys.argv[2])["extended"] if not hasattr(strategy.extended, n)]
    with strategy.scope():  # the wrap's strategy underneath: Keras builds its variables there
        inside = tf.distribute.get_strategy() is real
    print(json.dumps({"answers": answers(strategy), "missing": missing, "scope_is_the_wraps": inside,
                      "replicas": strategy.num_replicas_in_sync}))
"""


def test_multi_worker_mirrored_asked_on_one_host_answers_as_tensorflows_own(tmp_path: Path) -> None:
    """The AWS example's `strategy.cluster_resolver.task_type` after training, on 1 host of several GPUs."""
    import json
    import os
    import subprocess
    import sys

    from .conftest import ENTRYPOINTS

    env = {**os.environ, "PYTHONPATH": ENTRYPOINTS, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("TF_CONFIG", None)
    script = tmp_path / "answers.py"
    script.write_text(ANSWERS)

    def run(*args: str) -> dict:
        done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    tensorflow = run("tensorflow")
    wrapped = run("wrap", json.dumps(tensorflow))
    assert tensorflow["answers"]["task_type"] is None and tensorflow["answers"]["resolver"] == "TFConfigClusterResolver"
    assert wrapped["answers"] == tensorflow["answers"]
    assert wrapped["missing"] == [] and len(tensorflow["names"]) >= 20
    assert wrapped["scope_is_the_wraps"] and wrapped["replicas"] == 1
