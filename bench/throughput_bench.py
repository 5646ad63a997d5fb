"""Training throughput where training, not start-up, dominates: six ways to train one model on one machine.

Data: scikit-learn's digits (1,797 real 8x8 images) made 28x28: each image is zoomed to 26x26,
placed at a random offset (0-2 pixels each way) in a 28x28 frame and given Gaussian noise (seeded). 60,000 training
examples come from three quarters of the original digits, 10,000 held-out ones from the other
quarter, so held-out accuracy means a digit never seen, not a copy with other noise.

Models (the entrypoint's built-ins, written out in plain Keras for the other variants):
  mlp  784 -> 256 -> 128 -> 10 logits;  cnn  conv32, conv64, maxpool, dropout, dense 128, 10 logits.
Adam at 0.001, batch 32 (one replica, the default strategy) and, where a variant has it, 20 steps per
tf.function call, in every variant:
  plain_fit    model.fit(x, y, batch_size=32, validation_data=...) on NumPy arrays, as a Keras user writes it
  tuned_fit    fit on tf.data (from_tensor_slices, shuffle, batch, prefetch(AUTOTUNE)), steps_per_execution=20
  smtrain_fit  smtrain_tf.fit(model, (x, y), ...) on the same compiled model
  entrypoint   entrypoints/smtrain_entry.py --model mlp|cnn on the same data as NPZ channels
  wrapped      the plain_fit script unchanged under entrypoints/smtrain_wrap.py (its fit tuned: several steps
               per call, smtrain_tf/wrap/fit_tuning.py)
  wrapped_untuned  the same with SMTRAIN_WRAP_TUNING=off (code.wrap_tuning: false): Keras's fit as the script
               compiles it, as the wrap ran it before the tuning
  hand_loop    tf.data + a tf.function running 20 GradientTape steps per call: the practical ceiling

Each variant is a fresh process. examples/s counts training time only (not evaluation), steady state:
the median over every epoch but the first (which traces and compiles). Time to target: seconds from
the process's launch (imports, data loading, tracing and per-epoch evaluation included) to the metric
line of the first epoch whose held-out accuracy reaches 0.97; "not reached" within the epochs run.
The mlp trains on full epochs (1,875 steps); the cnn, about 20x slower per example here, on epochs of
150 steps evaluated on the first 2,000 held-out examples, so that the bench stays within minutes.
Fairness on a shared machine: the variants run in rounds, each round in the reverse order of the last,
and the figures are medians over all rounds.

The planned layouts, locally (mlp, 2 epochs, the wrapped script tuned and untuned, alternating): one host
of 2 CPU replicas under Mirrored (SMTRAIN_CPU_REPLICAS=2) and 2 hosts under MultiWorkerMirrored (two
processes on this machine, whose 2 cores they share), examples/s of the chief's second epoch (training
time, up to its validation). And what the local proof of a plan costs: the wrapped cnn (2 epochs of 150
steps, tuned) on one host of 4 CPU replicas and on 2 hosts, the wall seconds of the whole run.

    .venv/bin/python bench/throughput_bench.py [--out FILE] [--rounds 3] [--cnn-rounds 1] [--models mlp,cnn]
                                               [--layout-rounds 2] [--only-layouts]
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

from smtrain.local.ports import Reserved

REPO = Path(__file__).resolve().parents[1]
ENTRYPOINTS = REPO / "entrypoints"
ENTRYPOINT = ENTRYPOINTS / "smtrain_entry.py"
WRAP = ENTRYPOINTS / "smtrain_wrap.py"

TRAIN_EXAMPLES = 60_000
HELD_OUT_EXAMPLES = 10_000
BATCH = 32
STEPS_PER_EXECUTION = 20
SHUFFLE_BUFFER = 10_000  # the entrypoint's default
LEARNING_RATE = 0.001
TARGET = 0.97
SEED = 42
VARIANTS = ("plain_fit", "tuned_fit", "smtrain_fit", "entrypoint", "wrapped", "wrapped_untuned", "hand_loop")
LAYOUTS = ("mirrored_2_replicas", "multi_worker_mirrored_2_hosts")
# Per model: epochs run, steps per epoch (None: the whole training set), held-out examples evaluated.
SETTINGS: dict[str, dict[str, Any]] = {
    "mlp": {"epochs": 3, "steps_per_epoch": None, "eval_examples": HELD_OUT_EXAMPLES},
    "cnn": {"epochs": 4, "steps_per_epoch": 150, "eval_examples": 2_000},
}


# --- data ------------------------------------------------------------------------------------------

def make_data(seed: int = 0, train: int = TRAIN_EXAMPLES, held_out: int = HELD_OUT_EXAMPLES,
              size: int = 26, noise: float = 0.1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_held_out, y_held_out): float32 [n, 28, 28] in [0, 1], int64 labels 0-9.

    The two sets come from disjoint original digits (a seeded three-to-one split)."""
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    zoomed = np.clip(np.stack([zoom(image, size / 8, order=1) for image in images]), 0, 1).astype(np.float32)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(labels))
    cut = len(labels) * 3 // 4

    def sample(originals: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        pick = rng.choice(originals, n)
        rows, cols = rng.integers(0, 28 - size + 1, n), rng.integers(0, 28 - size + 1, n)
        x = np.zeros((n, 28, 28), np.float32)
        for i in range(n):
            x[i, rows[i]:rows[i] + size, cols[i]:cols[i] + size] = zoomed[pick[i]]
        x += rng.normal(0, noise, x.shape).astype(np.float32)
        return np.clip(x, 0, 1), labels[pick]

    x, y = sample(order[:cut], train)
    xv, yv = sample(order[cut:], held_out)
    return x, y, xv, yv


def write_channels(root: Path) -> dict[str, Path]:
    """NPZ channels: train, validation (10,000) and validation_small (its first 2,000, for the cnn)."""
    x, y, xv, yv = make_data()
    small = SETTINGS["cnn"]["eval_examples"]
    channels = {"train": (x, y), "validation": (xv, yv), "validation_small": (xv[:small], yv[:small])}
    paths = {}
    for name, (xs, ys) in channels.items():
        directory = root / name
        directory.mkdir(parents=True)
        np.savez(directory / "data.npz", x=xs, y=ys)
        paths[name] = directory
    return paths


# --- the variants run in this process (--worker) ------------------------------------------------------

def _build(keras: Any, model: str) -> Any:
    """The entrypoint's built-in model itself (smtrain_tf/models/builders.py), the same in every variant."""
    if str(ENTRYPOINTS) not in sys.path:
        sys.path.insert(0, str(ENTRYPOINTS))
    from smtrain_tf.models import builders

    if model == "mlp":
        return builders.mlp((28, 28), 10, (256, 128))
    return builders.cnn((28, 28), 10)


def _say(epoch: int, accuracy: float, examples: int, seconds: float) -> None:
    print(f"bench epoch={epoch} val_accuracy={accuracy:.4f} examples_per_sec={examples / seconds:.0f} "
          f"train_seconds={seconds:.3f}", flush=True)


def worker(variant: str, model_name: str, data: Path, validation: Path, epochs: int,
           steps_per_epoch: int | None) -> None:
    import tensorflow as tf

    keras = tf.keras
    keras.utils.set_random_seed(SEED)
    train, held = np.load(data / "data.npz"), np.load(validation / "data.npz")
    x, y, xv, yv = train["x"], train["y"], held["x"], held["y"]
    steps = steps_per_epoch or len(y) // BATCH
    examples = steps * BATCH
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    if variant == "smtrain_fit":
        sys.path.insert(0, str(ENTRYPOINTS))
        import smtrain_tf

        with smtrain_tf.strategy().scope():
            model = _build(keras, model_name)
            model.compile(keras.optimizers.Adam(LEARNING_RATE), loss, metrics=["accuracy"])
        # Its own metric lines (epoch=... val_accuracy=... examples_per_sec=...) are the figures.
        smtrain_tf.fit(model, (x, y), (xv, yv), epochs=epochs, batch_size_per_replica=BATCH,
                       steps_per_epoch=steps_per_epoch, shuffle_buffer=SHUFFLE_BUFFER, seed=SEED)
        return

    model = _build(keras, model_name)
    if variant == "hand_loop":
        _hand_loop(tf, model, loss, x, y, xv, yv, epochs, steps)
        return

    class Timer(keras.callbacks.Callback):
        """Training seconds of each epoch: from its start to the start of its validation."""

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.began = time.perf_counter()
            self.seconds: float | None = None

        def on_test_begin(self, logs: Any = None) -> None:
            self.seconds = time.perf_counter() - self.began

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            seconds = self.seconds if self.seconds is not None else time.perf_counter() - self.began
            _say(epoch + 1, float(logs["val_accuracy"]), examples, seconds)

    if variant == "plain_fit":
        model.compile(keras.optimizers.Adam(LEARNING_RATE), loss, metrics=["accuracy"])
        model.fit(x, y, batch_size=BATCH, epochs=epochs, steps_per_epoch=steps_per_epoch,
                  validation_data=(xv, yv), verbose=0, callbacks=[Timer()])
        return
    # tuned_fit: the tf.data performance guide's pipeline, several steps per call.
    model.compile(keras.optimizers.Adam(LEARNING_RATE), loss, metrics=["accuracy"],
                  steps_per_execution=STEPS_PER_EXECUTION)
    stream = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(SHUFFLE_BUFFER, seed=SEED)
    stream = stream.repeat() if steps_per_epoch else stream
    stream = stream.batch(BATCH, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    held_out = tf.data.Dataset.from_tensor_slices((xv, yv)).batch(BATCH).prefetch(tf.data.AUTOTUNE)
    model.fit(stream, epochs=epochs, steps_per_epoch=steps_per_epoch, validation_data=held_out, verbose=0,
              callbacks=[Timer()])


def _hand_loop(tf: Any, model: Any, loss: Any, x: np.ndarray, y: np.ndarray, xv: np.ndarray, yv: np.ndarray,
               epochs: int, steps: int) -> None:
    """The practical ceiling: the least code that trains the model with tf.data and a tf.function."""
    optimizer = tf.keras.optimizers.Adam(LEARNING_RATE)
    stream = (tf.data.Dataset.from_tensor_slices((x, y)).shuffle(SHUFFLE_BUFFER, seed=SEED).repeat()
              .batch(BATCH, drop_remainder=True).prefetch(tf.data.AUTOTUNE))
    iterator = iter(stream)
    held_out = tf.data.Dataset.from_tensor_slices((xv, yv)).batch(BATCH).prefetch(tf.data.AUTOTUNE)

    @tf.function
    def train_steps(n: Any) -> Any:
        total = tf.constant(0.0)
        for _ in tf.range(n):
            xb, yb = next(iterator)
            with tf.GradientTape() as tape:
                value = loss(yb, model(xb, training=True))
            gradients = tape.gradient(value, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            total += value
        return total

    @tf.function
    def correct(xb: Any, yb: Any) -> Any:
        predicted = tf.argmax(model(xb, training=False), axis=-1)
        return tf.reduce_sum(tf.cast(predicted == yb, tf.int64))

    for epoch in range(1, epochs + 1):
        began = time.perf_counter()
        done = 0
        while done < steps:
            n = min(STEPS_PER_EXECUTION, steps - done)
            train_steps(tf.constant(n)).numpy()
            done += n
        seconds = time.perf_counter() - began
        right = sum(int(correct(xb, yb)) for xb, yb in held_out)
        _say(epoch, right / len(yv), steps * BATCH, seconds)


# --- the driver ---------------------------------------------------------------------------------------------

def _env(base: Path, channels: dict[str, Path], hyperparameters: dict[str, Any],
         hosts: tuple[str, ...] = ("algo-1",), current: str = "algo-1") -> dict[str, str]:
    """The SageMaker container's contract for one host, as tests/entrypoint/sagemaker_env.py builds it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "TF_CONFIG", "SAGEMAKER_", "SMTRAIN_"))}
    env.update({
        "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "",
        "SAGEMAKER_BASE_DIR": str(base), "SM_MODEL_DIR": str(base / "model"), "SM_OUTPUT_DIR": str(base / "output"),
        "SM_CHANNELS": json.dumps(sorted(channels)), "SM_HOSTS": json.dumps(list(hosts)), "SM_CURRENT_HOST": current,
        "SM_NUM_GPUS": "0", "SM_HPS": json.dumps(hyperparameters), "PYTHONPATH": str(ENTRYPOINTS),
    })
    for name, path in channels.items():
        env[f"SM_CHANNEL_{name.upper()}"] = str(path)
    return env


def _timed_lines(argv: list[str], env: dict[str, str], cwd: Path) -> list[tuple[float, str]]:
    """Run a process; (seconds since launch, line) for each stdout line."""
    with tempfile.TemporaryFile(mode="w+") as stderr:
        began = time.perf_counter()
        process = subprocess.Popen(argv, env=env, cwd=str(cwd), stdout=subprocess.PIPE, stderr=stderr, text=True,
                                   bufsize=1)
        assert process.stdout is not None
        lines = [(time.perf_counter() - began, line.rstrip("\n")) for line in process.stdout]
        if process.wait() != 0:
            stderr.seek(0)
            raise SystemExit(f"{argv[1:4]} exited {process.returncode}:\n{lines[-5:]}\n{stderr.read()[-3000:]}")
    return lines


def _fields(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def run_variant(variant: str, model: str, work: Path, channels: dict[str, Path]) -> dict[str, Any]:
    """One fresh process: per epoch (seconds since launch, held-out accuracy, examples/s)."""
    settings = SETTINGS[model]
    validation = channels["validation" if settings["eval_examples"] == HELD_OUT_EXAMPLES else "validation_small"]
    used = {"train": channels["train"], "validation": validation}
    base = Path(tempfile.mkdtemp(prefix=f"{model}-{variant}-", dir=work))
    if variant == "entrypoint":
        hyperparameters = {"model": model, "epochs": settings["epochs"], "batch_size_per_replica": BATCH,
                           "learning_rate": LEARNING_RATE, "steps_per_execution": STEPS_PER_EXECUTION,
                           "seed": SEED, "max_steps_per_epoch": settings["steps_per_epoch"] or 0}
        argv = [sys.executable, str(ENTRYPOINT)]
        for key, value in sorted(hyperparameters.items()):
            argv += [f"--{key}", str(value)]
        env, cwd, prefix = _env(base, used, hyperparameters), ENTRYPOINTS, "epoch="
    else:
        argv = ["--worker", "plain_fit" if variant.startswith("wrapped") else variant, "--model", model,
                "--train", str(used["train"]), "--validation", str(validation), "--epochs", str(settings["epochs"])]
        if settings["steps_per_epoch"]:
            argv += ["--steps-per-epoch", str(settings["steps_per_epoch"])]
        env, cwd = _env(base, used, {}), work
        prefix = "epoch=" if variant == "smtrain_fit" else "bench epoch="
        if variant.startswith("wrapped"):
            env["SMTRAIN_WRAP_SCRIPT"] = str(Path(__file__).resolve())
            env["SMTRAIN_WRAP_TUNING"] = "off" if variant == "wrapped_untuned" else "on"
            argv = [sys.executable, str(WRAP), *argv]
        else:
            argv = [sys.executable, str(Path(__file__).resolve()), *argv]
    lines = _timed_lines(argv, env, cwd)
    epochs = [(t, _fields(line)) for t, line in lines if line.startswith(prefix)]
    if len(epochs) != settings["epochs"]:
        raise SystemExit(f"{model} {variant}: expected {settings['epochs']} epoch lines, got {lines[-8:]}")
    return {"seconds": [round(t, 2) for t, _ in epochs],
            "val_accuracy": [float(f["val_accuracy"]) for _, f in epochs],
            "examples_per_sec": [float(f["examples_per_sec"]) for _, f in epochs],
            "total_s": round(lines[-1][0], 2)}


_PORTS = Reserved()  # held until the bench ends: no local run or other bench takes them meanwhile


def _free_ports(count: int) -> list[int]:
    return _PORTS.take(count)


def run_layout(layout: str, tuning: str, work: Path, channels: dict[str, Path], epochs: int = 2,
               model: str = "mlp", replicas: int = 2) -> tuple[float, float]:
    """The wrapped script on a planned layout: examples/s of the chief's last epoch, and the run's wall seconds."""
    steps = SETTINGS[model]["steps_per_epoch"]
    used = {"train": channels["train"], "validation": channels["validation" if model == "mlp" else "validation_small"]}
    argv = [sys.executable, str(WRAP), "--worker", "plain_fit", "--model", model, "--train", str(used["train"]),
            "--validation", str(used["validation"]), "--epochs", str(epochs)]
    argv += ["--steps-per-epoch", str(steps)] if steps else []
    names = ("algo-1", "algo-2") if layout.startswith("multi_worker_mirrored") else ("algo-1",)
    addresses = [f"127.0.0.1:{port}" for port in _free_ports(len(names))]
    processes, stderrs = [], []
    for index, name in enumerate(names):
        base = Path(tempfile.mkdtemp(prefix=f"{layout}-{tuning}-{name}-", dir=work))
        stderrs.append(base / "stderr.log")
        env = _env(base, used, {}, hosts=names, current=name)
        env.update({"SMTRAIN_WRAP_SCRIPT": str(Path(__file__).resolve()), "SMTRAIN_WRAP_TUNING": tuning})
        if len(names) > 1:
            env["SM_FRAMEWORK_PARAMS"] = json.dumps({"sagemaker_multi_worker_mirrored_strategy_enabled": True})
            env["TF_CONFIG"] = json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index},
                                           "environment": "cloud"})
        else:
            env["SMTRAIN_CPU_REPLICAS"] = str(replicas)
        with open(stderrs[-1], "w") as stderr:  # the child keeps its own copy of the descriptor
            processes.append(subprocess.Popen(argv, env=env, cwd=str(work), stdout=subprocess.PIPE, stderr=stderr,
                                              text=True))
    began = time.perf_counter()
    outputs = [process.communicate()[0] for process in processes]
    wall = time.perf_counter() - began
    if any(process.returncode for process in processes):
        told = "\n".join(f"{path.name} of {path.parent.name}:\n{path.read_text()[-3000:]}" for path in stderrs)
        raise SystemExit(f"{layout} {tuning}: exited {[p.returncode for p in processes]}:\n{outputs[0][-3000:]}\n{told}")
    rates = [float(_fields(line)["examples_per_sec"]) for line in outputs[0].splitlines()
             if line.startswith("bench epoch=")]
    return rates[-1], wall


def layout_figures(work: Path, channels: dict[str, Path], rounds: int) -> dict[str, Any]:
    """Tuned and untuned wrapped runs on each planned layout, alternating (see the module's docstring)."""
    figures: dict[str, Any] = {}
    for layout in LAYOUTS:
        rates: dict[str, list[float]] = {"on": [], "off": []}
        order = ["on", "off"]
        for _ in range(rounds):
            for tuning in order:
                rates[tuning].append(run_layout(layout, tuning, work, channels)[0])
                print(f"{layout} tuning={tuning}: {rates[tuning][-1]:.0f}", file=sys.stderr, flush=True)
            order.reverse()
        tuned, untuned = statistics.median(rates["on"]), statistics.median(rates["off"])
        figures[layout] = {"wrapped_examples_per_sec": round(tuned), "wrapped_untuned_examples_per_sec": round(untuned),
                           "each_run": {"wrapped": rates["on"], "wrapped_untuned": rates["off"]},
                           "ratio_tuned_to_untuned": round(tuned / untuned, 2)}
    # The local proof's cost: the cnn on 4 replicas of one host and on 2 hosts (one host's 2 cores either way).
    walls = {name: run_layout(name, "on", work, channels, model="cnn", replicas=4)[1]
             for name in ("mirrored_4_replicas", "multi_worker_mirrored_2_hosts")}
    figures["cnn_local_run_wall_s"] = {**{k: round(v, 1) for k, v in walls.items()},
                                       "ratio_4_replicas_to_2_hosts": round(walls["mirrored_4_replicas"]
                                                                            / walls["multi_worker_mirrored_2_hosts"], 2)}
    return figures


def _to_target(run: dict[str, Any]) -> tuple[int | None, float | None]:
    for epoch, (seconds, accuracy) in enumerate(zip(run["seconds"], run["val_accuracy"], strict=True), 1):
        if accuracy >= TARGET:
            return epoch, seconds
    return None, None


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    steady = [rate for run in runs for rate in run["examples_per_sec"][1:]]
    hits = [_to_target(run) for run in runs]
    reached = [seconds for _, seconds in hits if seconds is not None]
    return {
        "examples_per_sec": round(statistics.median(steady)),
        "examples_per_sec_spread": [round(min(steady)), round(max(steady))],
        "first_epoch_examples_per_sec": [round(run["examples_per_sec"][0]) for run in runs],
        "seconds_to_target": round(statistics.median(reached), 1) if len(reached) == len(runs) else "not reached",
        "seconds_to_target_each_run": [s if s is not None else "not reached" for _, s in hits],
        "epochs_to_target_each_run": [e if e is not None else "not reached" for e, _ in hits],
        "final_val_accuracy_each_run": [run["val_accuracy"][-1] for run in runs],
        "process_seconds_each_run": [run["total_s"] for run in runs],
    }


def _ratio(figures: dict[str, Any], top: str, bottom: str) -> float:
    return round(figures[top]["examples_per_sec"] / figures[bottom]["examples_per_sec"], 2)


def bench(models: list[str], rounds: dict[str, int], layout_rounds: int = 1) -> dict[str, Any]:
    began = time.time()
    load_before = os.getloadavg()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="smtrain-throughput-") as tmp:
        work = Path(tmp)
        channels = write_channels(work / "data")
        order = list(VARIANTS)
        for model in models:
            runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
            for _ in range(rounds[model]):
                for variant in order:
                    runs[variant].append(run_variant(variant, model, work, channels))
                    print(f"{model} {variant}: {runs[variant][-1]}", file=sys.stderr, flush=True)
                order.reverse()
            figures = {v: summarise(r) for v, r in runs.items()}
            results[model] = {
                "settings": {**SETTINGS[model], "rounds": rounds[model]},
                "variants": figures,
                "ratios_examples_per_sec": {
                    "entrypoint/hand_loop": _ratio(figures, "entrypoint", "hand_loop"),
                    "smtrain_fit/hand_loop": _ratio(figures, "smtrain_fit", "hand_loop"),
                    "entrypoint/plain_fit": _ratio(figures, "entrypoint", "plain_fit"),
                    "entrypoint/tuned_fit": _ratio(figures, "entrypoint", "tuned_fit"),
                    "smtrain_fit/plain_fit": _ratio(figures, "smtrain_fit", "plain_fit"),
                    "smtrain_fit/tuned_fit": _ratio(figures, "smtrain_fit", "tuned_fit"),
                    "wrapped/plain_fit": _ratio(figures, "wrapped", "plain_fit"),
                    "wrapped/hand_loop": _ratio(figures, "wrapped", "hand_loop"),
                    "wrapped_untuned/hand_loop": _ratio(figures, "wrapped_untuned", "hand_loop"),
                    "wrapped/wrapped_untuned": _ratio(figures, "wrapped", "wrapped_untuned"),
                },
                # The run's own noise: the hand loop's slowest and fastest steady epochs over its median (on
                # this shared 2-core machine single epochs of one variant differ by up to a fifth).
                "hand_loop_noise": [round(figures["hand_loop"]["examples_per_sec_spread"][i]
                                          / figures["hand_loop"]["examples_per_sec"], 2) for i in (0, 1)],
                "runs": runs,
            }
        if layout_rounds > 0:
            results["planned_layouts"] = layout_figures(work, channels, layout_rounds)
    import tensorflow as tf

    return {
        "what": "examples/s (training time only, median of every epoch but the first) and seconds from launch to "
                f"{TARGET} held-out accuracy, batch {BATCH}, default strategy, CPU; see bench/throughput_bench.py",
        "data": {"train_examples": TRAIN_EXAMPLES, "held_out_examples": HELD_OUT_EXAMPLES, "shape": [28, 28],
                 "from": "sklearn digits zoomed to 26x26, shifted in 28x28, Gaussian noise 0.1; disjoint originals"},
        "batch_per_replica": BATCH, "steps_per_execution": STEPS_PER_EXECUTION, "shuffle_buffer": SHUFFLE_BUFFER,
        "learning_rate": LEARNING_RATE, "target_val_accuracy": TARGET,
        "fairness": "each variant a fresh process; rounds alternate the order (forward, reversed, ...)",
        **results,
        "machine": {"python": platform.python_version(), "tensorflow": tf.__version__, "cpus": os.cpu_count(),
                    "platform": platform.platform(), "load_average_1min_before": round(load_before[0], 2),
                    "load_average_1min_after": round(os.getloadavg()[0], 2)},
        "wall_s": round(time.time() - began, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the mlp variants")
    parser.add_argument("--cnn-rounds", type=int, default=1, help="rounds of the cnn variants")
    parser.add_argument("--layout-rounds", type=int, default=2, help="rounds of the planned layouts (0: none)")
    parser.add_argument("--only-layouts", action="store_true", help="the planned layouts alone")
    # A variant run in this process (the driver starts these).
    parser.add_argument("--worker", choices=("plain_fit", "tuned_fit", "smtrain_fit", "hand_loop"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--model", choices=tuple(SETTINGS), help=argparse.SUPPRESS)
    parser.add_argument("--train", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--validation", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--epochs", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--steps-per-epoch", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.model, args.train, args.validation, args.epochs, args.steps_per_epoch)
        return
    models = [] if args.only_layouts else [m for m in args.models.split(",") if m]
    result = bench(models, {"mlp": args.rounds, "cnn": args.cnn_rounds}, max(args.layout_rounds, int(args.only_layouts)))
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
