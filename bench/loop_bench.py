"""The one loop's speed: a user's unchanged Keras script under the wrap against a hand-written loop, per layout.

The script is what a Keras user writes: a small MLP (64 -> 256 -> 128 -> 10 logits), compiled with Adam, a
loss object and accuracy, `model.fit(x, y, batch_size=32)` on NumPy arrays, a callback timing each epoch. It
runs unchanged under entrypoints/smtrain_wrap.py (Keras's own fit, the wrap's batch rule and tuning). The hand
loop is the practical ceiling for the same model under the same strategy: tf.data (from_tensor_slices,
shuffle, repeat, batch at the global batch, prefetch), the strategy's distributed dataset, and a tf.function
running 20 GradientTape steps per call inside `strategy.run`, the gradients summed by Keras's optimizer.

Layouts: one device (the default strategy); one host of 2 CPU replicas (MirroredStrategy; the wrap's
SMTRAIN_CPU_REPLICAS=2, the hand loop's own 2 logical CPU devices); 2 hosts (MultiWorkerMirroredStrategy, two
processes on this machine sharing its cores, TF_CONFIG). Batch 32 per replica everywhere. examples/s counts the
chief's training time of every epoch but the first (which traces), median over epochs and rounds; each round
runs the two in a fresh process each, alternating which goes first. The figure of point 8 (issue 46) is the
ratio wrapped / hand loop per layout.

Data: scikit-learn's digits (1,797 real 8x8 images, 64 features), tiled with small noise to 32,000 examples.

    .venv/bin/python bench/loop_bench.py [--out FILE] [--rounds 5] [--epochs 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import wrap_bench  # noqa: E402 - bench/ beside this file
from throughput_bench import WRAP, _env, _fields, _free_ports  # noqa: E402

EXAMPLES = 32_000
BATCH = 32
STEPS_PER_CALL = 20
LAYOUTS = ("one_device", "mirrored_2_replicas", "multi_worker_mirrored_2_hosts")


def write_data(work: Path) -> Path:
    """The train channel: wrap_bench's digits, tiled to EXAMPLES."""
    wrap_bench.write_data(work, EXAMPLES)
    return work / "train"


def _model(keras: Any) -> Any:
    return keras.Sequential([keras.Input((64,)), keras.layers.Dense(256, activation="relu"),
                             keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])


def _say(epoch: int, examples: int, seconds: float) -> None:
    print(f"bench epoch={epoch} examples_per_sec={examples / seconds:.0f}", flush=True)


def script(epochs: int) -> None:
    """The user's script, as written for one device (the wrap makes it the layout's)."""
    import keras

    data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "data.npz"))
    x, y = data["x"], data["y"]

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.began = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            _say(epoch + 1, len(y), time.perf_counter() - self.began)

    model = _model(keras)
    model.compile(keras.optimizers.Adam(0.001), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0, callbacks=[Timer()])


def hand_loop(epochs: int) -> None:
    """The same model trained by the least code under the layout's strategy."""
    import tensorflow as tf

    replicas = int(os.environ.get("BENCH_CPU_REPLICAS", "1"))
    if os.environ.get("TF_CONFIG"):
        strategy: Any = tf.distribute.MultiWorkerMirroredStrategy()
    elif replicas > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
        strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
    else:
        strategy = tf.distribute.get_strategy()
    import keras

    data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "data.npz"))
    x, y = data["x"], data["y"]
    global_batch = BATCH * strategy.num_replicas_in_sync
    steps = len(y) // global_batch
    stream = (tf.data.Dataset.from_tensor_slices((x, y)).shuffle(10_000, seed=1).repeat()
              .batch(global_batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE))
    iterator = iter(strategy.experimental_distribute_dataset(stream))
    with strategy.scope():
        model = _model(keras)
        optimizer = keras.optimizers.Adam(0.001)
        optimizer.build(model.trainable_variables)  # built lazily inside a replica's step it fails under a strategy
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)  # scaled for the replicas by Keras

    def step(xb: Any, yb: Any) -> Any:
        with tf.GradientTape() as tape:
            value = loss(yb, model(xb, training=True))
        optimizer.apply(tape.gradient(value, model.trainable_variables), model.trainable_variables)
        return value

    @tf.function
    def train_steps(n: Any) -> None:
        for _ in tf.range(n):
            xb, yb = next(iterator)
            strategy.run(step, args=(xb, yb))

    for epoch in range(1, epochs + 1):
        began = time.perf_counter()
        done = 0
        while done < steps:
            n = min(STEPS_PER_CALL, steps - done)
            train_steps(tf.constant(n))
            done += n
        _ = [float(v.numpy().sum()) for v in model.trainable_variables[:1]]  # the steps have run
        _say(epoch, steps * global_batch, time.perf_counter() - began)


# --- the driver ---------------------------------------------------------------------------------------------

def run(kind: str, layout: str, work: Path, data: Path, epochs: int) -> list[float]:
    """One run (both hosts' processes on 2 hosts): the chief's examples/s of every epoch but the first."""
    hosts = ("algo-1", "algo-2") if layout == "multi_worker_mirrored_2_hosts" else ("algo-1",)
    addresses = [f"127.0.0.1:{port}" for port in _free_ports(len(hosts))]
    argv = ["--as", kind, "--epochs", str(epochs)]
    processes = []
    for index, name in enumerate(hosts):
        base = Path(tempfile.mkdtemp(prefix=f"{layout}-{kind}-{name}-", dir=work))
        env = _env(base, {"train": data}, {}, hosts=hosts, current=name)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "entrypoints"), str(Path(__file__).resolve().parent)])
        if len(hosts) > 1:
            env["SM_FRAMEWORK_PARAMS"] = json.dumps({"sagemaker_multi_worker_mirrored_strategy_enabled": True})
            env["TF_CONFIG"] = json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index},
                                           "environment": "cloud"})
        elif layout == "mirrored_2_replicas":
            env["SMTRAIN_CPU_REPLICAS" if kind == "wrapped" else "BENCH_CPU_REPLICAS"] = "2"
        if kind == "wrapped":
            env["SMTRAIN_WRAP_SCRIPT"] = str(Path(__file__).resolve())
            command = [sys.executable, str(WRAP), *argv]
        else:
            command = [sys.executable, str(Path(__file__).resolve()), *argv]
        stderr = open(base / "stderr.log", "w")  # noqa: SIM115 - the child keeps its own copy
        processes.append((subprocess.Popen(command, env=env, cwd=str(work), stdout=subprocess.PIPE, stderr=stderr,
                                           text=True), base / "stderr.log"))
        stderr.close()
    outputs = [process.communicate(timeout=1800)[0] for process, _ in processes]
    if any(process.returncode for process, _ in processes):
        told = "\n".join(path.read_text()[-3000:] for _, path in processes)
        raise SystemExit(f"{layout} {kind}: exited {[p.returncode for p, _ in processes]}:\n{outputs[0][-2000:]}"
                         f"\n{told}")
    rates = [float(_fields(line)["examples_per_sec"]) for line in outputs[0].splitlines()
             if line.startswith("bench epoch=")]
    if len(rates) != epochs:
        raise SystemExit(f"{layout} {kind}: expected {epochs} epoch lines, got {outputs[0][-2000:]}")
    return rates[1:]


def bench(rounds: int, epochs: int, layouts: tuple[str, ...] = LAYOUTS) -> dict[str, Any]:
    began = time.time()
    load_before = os.getloadavg()[0]
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = write_data(work)
        for layout in layouts:
            rates: dict[str, list[float]] = {"wrapped": [], "hand_loop": []}
            for number in range(rounds):
                order = ("wrapped", "hand_loop") if number % 2 == 0 else ("hand_loop", "wrapped")
                for kind in order:
                    rates[kind] += run(kind, layout, work, data, epochs)
            wrapped, hand = statistics.median(rates["wrapped"]), statistics.median(rates["hand_loop"])
            figures[layout] = {"wrapped_examples_per_sec": round(wrapped), "hand_loop_examples_per_sec": round(hand),
                               "ratio": round(wrapped / hand, 3),
                               "each_epoch": {k: [round(r) for r in v] for k, v in rates.items()}}
    return {
        "what": "a user's unchanged Keras script (MLP 64-256-128-10, fit on NumPy arrays, batch 32 per replica) "
                "under smtrain_wrap.py against a hand-written tf.function loop (tf.data with prefetch, 20 steps a "
                "call) under the same strategy, CPU; see bench/loop_bench.py",
        "command": f"python bench/loop_bench.py --rounds {rounds} --epochs {epochs}",
        "wanted": "ratio >= 0.85 on every layout (issue 46, point 8)",
        "examples": EXAMPLES, "batch_per_replica": BATCH, "epochs_timed_per_run": epochs - 1, "rounds": rounds,
        "layouts": figures,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_1min_before": round(load_before, 2),
                    "load_average_1min_after": round(os.getloadavg()[0], 2)},
        "wall_s": round(time.time() - began, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--rounds", type=int, default=5)  # the machine varies by 10-20% between runs
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--as", dest="kind", choices=("wrapped", "hand_loop"), help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()
    if args.kind == "wrapped":
        script(args.epochs)
        return
    if args.kind == "hand_loop":
        hand_loop(args.epochs)
        return
    result = bench(args.rounds, args.epochs, tuple(args.layouts.split(",")))
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
