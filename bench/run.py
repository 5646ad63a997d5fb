"""`make bench`: wall times of the CLI paths, and the entrypoint's training figures, in one run.

Figures go to a JSON file (default bench/results.json) with the machine they were taken on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def timed(cmd: list[str], repeat: int) -> dict[str, float]:
    """Median and min wall seconds of `cmd` over `repeat` fresh processes (after one warm-up)."""
    env = {**os.environ, "SAGEMAKER_SUPPRESS_V2_WARNING": "1", "AWS_EC2_METADATA_DISABLED": "true"}
    subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=True)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3), "runs": repeat}


def cli_figures(repeat: int) -> dict[str, dict[str, float]]:
    smtrain = [str(BIN / "smtrain")]
    spec = "configs/mwms.yaml"
    return {
        "python -c pass": timed([sys.executable, "-c", "pass"], repeat),
        "smtrain --help": timed(smtrain + ["--help"], repeat),
        "smtrain validate": timed(smtrain + ["validate", spec], repeat),
        "smtrain plan": timed(smtrain + ["plan", spec], repeat),
        "python -c 'import sagemaker.tensorflow'": timed([sys.executable, "-c", "import sagemaker.tensorflow"],
                                                          repeat),
        "smtrain submit --dry-run": timed(smtrain + ["submit", spec, "--dry-run"], repeat),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-training", action="store_true", help="only the CLI timings")
    args = parser.parse_args()
    results: dict[str, object] = {
        "taken": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "cli_wall_time": cli_figures(args.repeat),
    }
    trainer = ROOT / "bench" / "entrypoint_bench.py"
    if not args.skip_training and trainer.exists():
        out = ROOT / "bench" / "results-entrypoint.json"
        subprocess.run([sys.executable, str(trainer), "--out", str(out)], cwd=ROOT, check=True)
        results["entrypoint_training"] = json.loads(out.read_text())
        out.unlink()
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
