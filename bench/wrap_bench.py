"""The cost of the wrap: the same plain Keras script run plainly and under smtrain_wrap.py.

Both runs use the default strategy (one process, no GPU), the same data, model, seed and batch
size per replica (32, as the script's users write it), and fit as the script compiled it
(SMTRAIN_WRAP_TUNING=off: the tuning's gain is throughput_bench.py's), in fresh processes that alternate, so that
a slower moment of the machine falls on both. The script times each epoch itself with a Keras
callback (the first epoch, which traces the step, is left out) and prints examples/s; the figure
is the median over epochs and repeats. The wrap's overhead is (plain - wrapped) / plain.

Data: scikit-learn's digits (1,797 real 8x8 images), tiled with small random shifts of intensity
to 28,000 examples, so training, not start-up, dominates.

    .venv/bin/python bench/wrap_bench.py [--out FILE] [--repeat 3] [--epochs 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
WRAP = REPO / "entrypoints" / "smtrain_wrap.py"
EXAMPLES = 28_000
BATCH = 32

SCRIPT = textwrap.dedent("""
    import argparse, os, time
    import numpy as np
    import tensorflow as tf

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(1)
    data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "data.npz"))
    x, y = data["x"], data["y"]

    class Timer(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.began = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds = time.perf_counter() - self.began
            print(f"bench epoch={epoch + 1} examples_per_sec={len(y) / seconds:.1f}", flush=True)

    model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(256, activation="relu"),
                                 tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)])
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(x, y, epochs=args.epochs, batch_size=args.batch_size, verbose=0, callbacks=[Timer()])
    model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))
""")


def write_data(directory: Path, examples: int = EXAMPLES) -> None:
    """directory/train/data.npz: the digits tiled with small noise to `examples` examples (bench/loop_bench.py's
    too)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    rng = np.random.default_rng(0)
    index = rng.integers(0, len(x), examples)
    noisy = np.clip(x[index] + rng.normal(0, 0.05, (examples, 64)).astype(np.float32), 0, 1)
    (directory / "train").mkdir(parents=True)
    np.savez(directory / "train" / "data.npz", x=noisy, y=digits.target[index].astype(np.int64))


def run(kind: str, work: Path, epochs: int) -> list[float]:
    base = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=work))
    (base / "model").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "SMTRAIN_", "TF_CONFIG"))}
    env.update({"SM_CHANNEL_TRAIN": str(work / "data" / "train"), "SM_MODEL_DIR": str(base / "model"),
                "SM_OUTPUT_DIR": str(base / "output"), "SAGEMAKER_BASE_DIR": str(base), "SM_NUM_GPUS": "0",
                "PYTHONPATH": str(REPO / "entrypoints"), "TF_CPP_MIN_LOG_LEVEL": "2"})
    args = ["--epochs", str(epochs), "--batch-size", str(BATCH)]
    script = work / "train.py"
    if kind == "plain":
        argv = [sys.executable, str(script), *args]
    else:
        env["SMTRAIN_WRAP_SCRIPT"] = str(script)
        # The wrap's own cost, with fit run as the script compiled it: its tuning (several steps per call)
        # is a gain of its own, measured against a hand-written loop by throughput_bench.py.
        env["SMTRAIN_WRAP_TUNING"] = "off"
        argv = [sys.executable, str(WRAP), *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=work, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{kind} run failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    rates = [float(line.split("examples_per_sec=")[1]) for line in done.stdout.splitlines()
             if line.startswith("bench epoch=")]
    return rates[1:]  # the first epoch traces the step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_data(work / "data")
        (work / "train.py").write_text(SCRIPT)
        rates: dict[str, list[float]] = {"plain": [], "wrapped": []}
        began = time.time()
        for _ in range(args.repeat):
            for kind in ("plain", "wrapped"):
                rates[kind] += run(kind, work, args.epochs)
    plain, wrapped = statistics.median(rates["plain"]), statistics.median(rates["wrapped"])
    result = {
        "what": "one plain Keras script (fit on arrays, batch 32) run plainly vs under smtrain_wrap.py, "
                "default strategy, CPU",
        "examples": EXAMPLES, "batch_per_replica": BATCH, "epochs_timed_per_run": args.epochs - 1,
        "runs_each": args.repeat,
        "plain_examples_per_sec": round(plain, 1), "wrapped_examples_per_sec": round(wrapped, 1),
        "overhead_percent": round(100 * (plain - wrapped) / plain, 2),
        "all_epochs": {k: [round(r, 1) for r in v] for k, v in rates.items()},
        "wall_s": round(time.time() - began, 1),
    }
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
