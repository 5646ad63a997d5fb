"""The cost of `smtrain check` on the digits demo (configs/local-demo.yaml), as a user pays it.

One run of `smtrain check configs/local-demo.yaml -o json` in a fresh process: its wall seconds (interpreter,
TensorFlow start-up and both training runs included) beside the two runs' own seconds from its JSON
(`seconds.one_device`, `seconds.planned`), the steps compared, the verdict and the loss and weights differences.
Issue 25 asks for under a minute on a 2-core machine. The demo data is written first where it is missing
(`python -m smtrain.local.demo_data`, as `make demo` does), outside the timing.

    .venv/bin/python bench/check_bench.py [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = "configs/local-demo.yaml"
BOUND_S = 60  # issue 25: "20 steps in both layouts finish in under a minute on this 2-core machine"


def demo_data() -> Path:
    """The digits channels the demo spec reads (SMTRAIN_DEMO_DATA or .demo/digits), written if missing."""
    folder = Path(os.environ.get("SMTRAIN_DEMO_DATA") or ROOT / ".demo" / "digits").resolve()
    if not all((folder / channel / "digits.npz").is_file() for channel in ("train", "validation")):
        subprocess.run([sys.executable, "-m", "smtrain.local.demo_data", str(folder)], cwd=ROOT, check=True,
                       capture_output=True)
    return folder


def _tensorflow_version() -> str | None:
    """From the installed distribution's metadata (tensorflow-cpu on Linux x86-64, tensorflow elsewhere), so
    that this process does not import TensorFlow."""
    for name in ("tensorflow-cpu", "tensorflow"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def check_figures(spec: str = SPEC) -> dict[str, Any]:
    """One `smtrain check SPEC -o json`, timed from outside; exit 1 (not equivalent) is a figure, not a failure."""
    env = {**os.environ, "SMTRAIN_DEMO_DATA": str(demo_data()), "SAGEMAKER_SUPPRESS_V2_WARNING": "1",
           "AWS_EC2_METADATA_DISABLED": "true"}
    command = [str(Path(sys.executable).parent / "smtrain"), "check", spec, "-o", "json"]
    load_before = _load()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"smtrain check {spec} exited {done.returncode}:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout)
    return {
        "what": f"wall seconds of one `smtrain check {spec} -o json` in a fresh process (start-up included) and "
                "the two runs' own seconds from its JSON, CPU; see bench/check_bench.py",
        "command": f"smtrain check {spec} -o json",
        "wall_s": round(wall, 1),
        "bound_s": BOUND_S,
        "within_bound": wall < BOUND_S,
        "seconds": result["seconds"],
        "steps": result["steps"],
        "checked_layout": result["checked_layout"],
        "one_device_global_batch": result["one_device"].get("global_batch"),
        "equivalent": result["equivalent"],
        "exit": done.returncode,
        "loss_difference": result["loss_difference"],
        "loss_tolerance": result["loss_tolerance"],
        "weights_difference": result["weights_difference"],
        "weights_tolerance": result["weights_tolerance"],
        "machine": {"python": platform.python_version(), "tensorflow": _tensorflow_version(),
                    "cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average_1min_before": load_before, "load_average_1min_after": _load()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    figures = check_figures()
    text = json.dumps(figures, indent=2) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
