"""Benchmark the bundled entrypoint against a seed-style `model.fit` baseline on the same data and model.

Data: scikit-learn's digits (8x8 images scaled to [0, 1]); 360 examples held out as validation.
Model: the entrypoint's MLP (64 -> 256 -> 128 -> 10 logits) in both runs.

(a) the entrypoint, run as SageMaker's container runs it (a subprocess with the SM_* contract):
    examples/s while training, and the time and epochs to reach the target held-out accuracy;
(b) the baseline: `model.fit(x, y, batch_size=32)` on NumPy arrays, one epoch at a time, evaluated
    on the held-out set after each epoch, until the same target.

Both run as fresh processes and their clocks start at process launch (TensorFlow's import counted
in both), from the time each output line is read here. Writes JSON to --out.

    .venv/bin/python bench/entrypoint_bench.py [--out bench/results/entrypoint.json]
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
import textwrap
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ENTRYPOINT = REPO / "entrypoints" / "smtrain_entry.py"
HELD_OUT = 360

BASELINE = textwrap.dedent("""
    import sys, time
    import numpy as np
    import tensorflow as tf

    train, val, target, max_epochs = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    tf.keras.utils.set_random_seed(42)
    x, y = np.load(train)["x"], np.load(train)["y"]
    xv, yv = np.load(val)["x"], np.load(val)["y"]
    model = tf.keras.Sequential([
        tf.keras.Input((8, 8)), tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(256, activation="relu"), tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10)])
    model.compile(tf.keras.optimizers.Adam(0.001),
                  tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    for epoch in range(1, max_epochs + 1):
        began = time.perf_counter()
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        seconds = time.perf_counter() - began
        accuracy = model.evaluate(xv, yv, batch_size=256, verbose=0)[1]
        print(f"epoch={epoch} val_accuracy={accuracy:.4f} examples_per_sec={len(y) / seconds:.0f}", flush=True)
        if accuracy >= target:
            break
""")


def _write_channels(root: Path) -> tuple[dict[str, Path], Path, Path]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    x, y = x[order], y[order]
    channels = {}
    for name, (xs, ys) in {"train": (x[HELD_OUT:], y[HELD_OUT:]), "validation": (x[:HELD_OUT], y[:HELD_OUT])}.items():
        directory = root / "data" / name
        directory.mkdir(parents=True)
        np.savez(directory / "digits.npz", x=xs, y=ys)
        channels[name] = directory
    return channels, channels["train"] / "digits.npz", channels["validation"] / "digits.npz"


def _timed_lines(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> list[tuple[float, str]]:
    """Run a process; return (seconds since launch, line) for each stdout line."""
    stderr = tempfile.TemporaryFile(mode="w+")
    began = time.perf_counter()
    process = subprocess.Popen(argv, env=env, cwd=str(cwd), stdout=subprocess.PIPE, stderr=stderr,
                               text=True, bufsize=1, start_new_session=True)
    lines = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append((time.perf_counter() - began, line.rstrip("\n")))
            if time.perf_counter() - began > timeout:
                break
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
    if process.returncode not in (0, -9):
        stderr.seek(0)
        errors = [line for line in stderr.read().splitlines() if "ERROR" in line or "Error" in line]
        raise RuntimeError(f"{argv[:3]} exited {process.returncode}: {lines[-5:]} {errors[-5:]}")
    stderr.close()
    return lines


def _fields(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "TF_CONFIG", "SAGEMAKER_"))}
    env.update({"PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""})
    return env


def run_entrypoint(root: Path, channels: dict[str, Path], hyperparameters: dict[str, object],
                   target: float) -> dict[str, object]:
    base = root / "opt-ml"
    env = _child_env()
    env.update({
        "SAGEMAKER_BASE_DIR": str(base), "SM_MODEL_DIR": str(base / "model"), "SM_OUTPUT_DIR": str(base / "output"),
        "SM_CHANNELS": json.dumps(sorted(channels)), "SM_HOSTS": json.dumps(["algo-1"]),
        "SM_CURRENT_HOST": "algo-1", "SM_NUM_GPUS": "0", "SM_HPS": json.dumps(hyperparameters),
    })
    for name, path in channels.items():
        env[f"SM_CHANNEL_{name.upper()}"] = str(path)
    argv = [sys.executable, str(ENTRYPOINT)]
    for key, value in sorted(hyperparameters.items()):
        argv += [f"--{key}", str(value)]
    lines = _timed_lines(argv, env, ENTRYPOINT.parent, timeout=150)
    epochs = [(t, _fields(line)) for t, line in lines if line.startswith("epoch=")]
    if not epochs:
        raise RuntimeError(f"the entrypoint printed no metric line: {lines[-5:]}")
    rates = [float(f["examples_per_sec"]) for _, f in epochs]
    hit = next(((t, f) for t, f in epochs if float(f["val_accuracy"]) >= target), None)
    config = next((_fields(line) for _, line in lines if line.startswith("config ")), {})
    return {
        "hyperparameters": hyperparameters,
        "global_batch_size": int(config.get("global_batch_size", 0)),
        "steps_per_epoch": int(config.get("steps_per_epoch", 0)),
        "epochs_run": len(epochs),
        # The first epoch carries tf.function tracing; the steady state is the median of the rest.
        "examples_per_sec_median": statistics.median(rates[1:] or rates),
        "examples_per_sec_first_epoch": rates[0],
        "epochs_to_target": int(hit[1]["epoch"]) if hit else None,
        "seconds_to_target_from_launch": round(hit[0], 2) if hit else None,
        "seconds_to_target_in_program": float(hit[1]["elapsed"]) if hit else None,
        "final_val_accuracy": float(epochs[-1][1]["val_accuracy"]),
        "seconds_total_from_launch": round(lines[-1][0], 2),
    }


def run_baseline(train: Path, val: Path, target: float, max_epochs: int) -> dict[str, object]:
    lines = _timed_lines([sys.executable, "-c", BASELINE, str(train), str(val), str(target), str(max_epochs)],
                         _child_env(), REPO, timeout=150)
    epochs = [(t, _fields(line)) for t, line in lines if line.startswith("epoch=")]
    rates = [float(f["examples_per_sec"]) for _, f in epochs]
    hit: tuple[float, dict[str, str]] | None = next(
        ((t, f) for t, f in epochs if float(f["val_accuracy"]) >= target), None)
    return {
        "how": "model.fit(x, y, batch_size=32) on NumPy arrays, one epoch per call, evaluate after each",
        "epochs_run": len(epochs),
        "examples_per_sec_median": statistics.median(rates[1:] or rates),
        "examples_per_sec_first_epoch": rates[0],
        "epochs_to_target": int(hit[1]["epoch"]) if hit else None,
        "seconds_to_target_from_launch": round(hit[0], 2) if hit else None,
        "final_val_accuracy": float(epochs[-1][1]["val_accuracy"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "entrypoint.json"))
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--epochs", type=int, default=40, help="entrypoint epochs (it stops at this count)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="smtrain-bench-") as tmp:
        root = Path(tmp)
        channels, train, val = _write_channels(root)
        common = {"model": "mlp", "epochs": args.epochs, "seed": 42}
        # Same batch and rate as the baseline (epochs comparable), then a larger batch for throughput.
        same_batch = run_entrypoint(root / "a", channels, {**common, "batch_size_per_replica": 32,
                                                           "learning_rate": 0.001, "steps_per_execution": 44},
                                    args.target)
        large_batch = run_entrypoint(root / "b", channels, {**common, "batch_size_per_replica": 128,
                                                            "learning_rate": 0.003, "steps_per_execution": 11},
                                     args.target)
        baseline = run_baseline(train, val, args.target, max_epochs=args.epochs)
    result = {
        "target_val_accuracy": args.target,
        "data": {"name": "sklearn digits", "train_examples": 1797 - HELD_OUT, "held_out_examples": HELD_OUT},
        "model": "mlp 64-256-128-10",
        "entrypoint_batch32": same_batch,
        "entrypoint_batch128": large_batch,
        "baseline": baseline,
        "throughput_ratio_batch32": round(same_batch["examples_per_sec_median"] / baseline["examples_per_sec_median"], 2),
        "throughput_ratio_batch128": round(large_batch["examples_per_sec_median"] / baseline["examples_per_sec_median"],
                                           2),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
