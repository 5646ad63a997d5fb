"""`make bench`: wall times of the CLI paths, `submit --dry-run` against a bare boto3 client, the installed
size of `pip install smtrain` at git's HEAD and in the working tree, secret masking at scale, the spec fuzz
suite's count and time, the entrypoint's training figures, the wrap's overhead, the training throughput
of six ways to train one model, the wrapped script against a hand loop on each layout and the time of
`smtrain check` on the digits demo, in one run.

Figures go to a JSON file (default bench/results.json) with the machine they were taken on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
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


def dry_run_against_boto3(repeat: int) -> dict[str, object]:
    """`submit --dry-run` against the least a launcher on boto3 pays: importing boto3 and creating a SageMaker
    client (region set, no call), in fresh processes, alternating so that both see the same machine load.
    Issue 23 asks for a ratio of at most 3 (20 with the SageMaker SDK in the dry run)."""
    env = {**os.environ, "SAGEMAKER_SUPPRESS_V2_WARNING": "1", "AWS_EC2_METADATA_DISABLED": "true"}
    commands = {
        "smtrain submit configs/mwms.yaml --dry-run --output json":
            [str(BIN / "smtrain"), "submit", "configs/mwms.yaml", "--dry-run", "--output", "json"],
        "boto3 SageMaker client": [sys.executable, "-c",
                                   "import boto3; boto3.client('sagemaker', region_name='us-east-1')"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for rep in range(repeat + 1):  # the first round warms the file cache and is not counted
        for name, cmd in commands.items():
            start = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=True)
            if rep:
                times[name].append(time.perf_counter() - start)
    figures: dict[str, object] = {name: {"median_s": round(statistics.median(ts), 3), "min_s": round(min(ts), 3),
                                         "runs": repeat} for name, ts in times.items()}
    dry, client = (statistics.median(ts) for ts in times.values())
    figures["ratio"] = round(dry / client, 2)
    return figures


def _site_packages_mb(site: Path) -> float:
    """Apparent size of every file under `site` (links not followed), in MB."""
    total = sum(entry.stat(follow_symlinks=False).st_size for entry in site.rglob("*")
                if entry.is_file() and not entry.is_symlink())
    return round(total / 1e6, 1)


def _installed_size(wheel: Path, venv: Path) -> dict[str, object]:
    """`pip install WHEEL` (no extras, dependencies resolved from the index) in a fresh venv: what it holds."""
    from tests.support.wheel import fresh_venv, pip

    python, site = fresh_venv(venv)
    start = time.perf_counter()
    pip(python, "install", "--quiet", str(wheel)).check_returncode()
    took = time.perf_counter() - start
    listed = json.loads(pip(python, "list", "--format", "json").stdout)
    names = sorted(d["name"].lower() for d in listed)
    return {"site_packages_mb": _site_packages_mb(site), "distributions": len(names),
            "sagemaker_packages": [n for n in names if n.startswith("sagemaker")], "install_s": round(took, 1)}


def install_size_figures(before_ref: str = "HEAD") -> dict[str, object]:
    """The installed size of `pip install smtrain` (no extras) for the wheel of git's `before_ref` ("before",
    e.g. 42dbe71, the last commit whose smtrain required the SageMaker SDK) and of the working tree ("after"),
    each in a fresh venv. The ref's sources come from `git archive` (the working tree is left alone). Downloads
    from the package index where pip's cache lacks a wheel: a few minutes at first."""
    sys.path.insert(0, str(ROOT))
    from tests.support.wheel import build_wheel

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        head = base / "head"
        head.mkdir()
        archive = subprocess.run(["git", "archive", "--format=tar", before_ref], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(head)], input=archive, check=True)
        commit = subprocess.run(["git", "rev-parse", "--short", before_ref], cwd=ROOT, check=True, capture_output=True,
                                text=True).stdout.strip()
        before = _installed_size(build_wheel(base / "before", tree=head), base / "venv-before")
        after = _installed_size(build_wheel(base / "after"), base / "venv-after")
    return {"before": {"wheel_from": f"git {before_ref} {commit}", **before},
            "after": {"wheel_from": "working tree", **after},
            "measure": "apparent size of the files under a fresh venv's site-packages after `pip install WHEEL`"}


def masking_figures(entries: int = 100_000, lines: int = 10_000) -> dict[str, object]:
    """Secret masking in this process: a dry-run document with `entries` secret-named environment
    variables (registering them, then masking the document), and log lines while they are known."""
    from smtrain import redact

    environment = {f"SECRET_{i}": hashlib.sha256(str(i).encode()).hexdigest()[:24] for i in range(entries)}
    document = {"job_name": "bench", "request": {"Environment": environment,
                                                 "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
                                                 "HyperParameters": {"epochs": "10"}}}
    redact._forget()
    start = time.perf_counter()
    redact.remember(environment)
    registered = time.perf_counter()
    masked = redact.mask_data(document)
    done = time.perf_counter()
    assert all(v == redact.MASK for v in masked["request"]["Environment"].values())
    line = f"epoch=3 step=120 loss=0.4211 accuracy=0.8870 lr=0.002 examples_per_sec=5120.5 {environment['SECRET_7']}"
    began = time.perf_counter()
    for _ in range(lines):
        redact.mask_text(line)
    per_line = (time.perf_counter() - began) / lines
    redact._forget()
    return {"entries": entries, "remember_s": round(registered - start, 3), "mask_data_s": round(done - registered, 3),
            "total_s": round(done - start, 3), "log_line_chars": len(line), "log_line_us": round(per_line * 1e6, 1)}


def fuzz_figures() -> dict[str, object]:
    """The fuzz suite (tests/spec/test_validate_fuzz.py): how many specs, and how long, in one run."""
    sys.path.insert(0, str(ROOT))
    from tests.spec import test_validate_fuzz as fuzz

    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", fuzz.__file__],
                          cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    assert done.returncode == 0, done.stdout[-3000:]
    return {"corpus_specs": fuzz.CORPUS_SIZE, "hypothesis_specs": 500, "wall_s": round(wall, 1),
            "each_spec": "validate + plan -o json in-process; submit --dry-run for every spec valid for SageMaker",
            "pytest": done.stdout.strip().splitlines()[-1]}


def wrap_figures() -> dict[str, object]:
    """A plain Keras script run plainly and wrapped, alternating (bench/wrap_bench.py)."""
    out = ROOT / "bench" / "results-wrap.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "wrap_bench.py"), "--out", str(out)], cwd=ROOT, check=True)
    figures = json.loads(out.read_text())
    out.unlink()
    return figures


def throughput_figures() -> dict[str, object]:
    """Six ways to train an MLP and a CNN on 60,000 28x28 examples, alternating (bench/throughput_bench.py)."""
    out = ROOT / "bench" / "results-throughput.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "throughput_bench.py"), "--out", str(out)], cwd=ROOT,
                   check=True)
    figures = json.loads(out.read_text())
    out.unlink()
    return figures


def loop_figures() -> dict[str, object]:
    """The unchanged script under the wrap against a hand loop, per layout (bench/loop_bench.py)."""
    out = ROOT / "bench" / "results-loop.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "loop_bench.py"), "--out", str(out)], cwd=ROOT, check=True)
    figures = json.loads(out.read_text())
    out.unlink()
    return figures


def check_figures() -> dict[str, object]:
    """`smtrain check configs/local-demo.yaml -o json` once: wall and per-run seconds, verdict (bench/check_bench.py)."""
    from check_bench import check_figures as figures  # bench/ is sys.path[0] when run.py runs as a script

    return figures()


def _validate_and_init(lines: int) -> dict[str, object]:
    """validate and init on a generated script of `lines` lines of `x = 1`, in a temporary directory. Each
    command runs under a fresh interpreter that measures it (wall seconds; peak RSS from
    getrusage(RUSAGE_CHILDREN), which keeps the largest child ever waited for, so one command per interpreter)."""
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "src").mkdir()
        script = folder / "src" / "train.py"
        script.write_text("x = 1\n" * lines)
        (folder / "job.yaml").write_text(
            "name: big-script\nrole: arn:aws:iam::123456789012:role/SageMakerRole\nregion: us-east-1\n"
            "tensorflow:\n  version: \"2.21\"\ncompute:\n  instance_type: ml.g5.xlarge\n"
            "code:\n  source_dir: src\n  entry_point: train.py\noutput: s3://my-bucket/out\n")
        out["script_bytes"] = script.stat().st_size
        for name, args in (("validate", ["validate", "job.yaml"]), ("init", ["init", "src/train.py", "init.yaml"])):
            probe = [sys.executable, "-c", "import resource, subprocess, sys, json, time; s = time.perf_counter(); "
                     "r = subprocess.run(sys.argv[1:], capture_output=True).returncode; "
                     "print(json.dumps({'wall_s': round(time.perf_counter() - s, 2), 'exit': r, 'peak_rss_mb': "
                     "round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)}))",
                     sys.executable, "-m", "smtrain", *args]
            done = subprocess.run(probe, cwd=folder, capture_output=True, text=True, check=True)
            out[name] = json.loads(done.stdout)
    return out


def big_script_figures() -> dict[str, object]:
    """validate and init on a 5 MB training script (850,000 lines), which is not read past its size, and on
    the costliest one still read, just under the bound of one file (smtrain/spec/python_file.py)."""
    from smtrain.spec.python_file import MAX_BYTES

    return {**_validate_and_init(850_000), "under_the_bound": _validate_and_init(MAX_BYTES // 6 - 100)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-training", action="store_true", help="only the CLI timings")
    parser.add_argument("--only-masking", action="store_true",
                        help="only the secret-masking figures, merged into the existing --out file")
    parser.add_argument("--only-fuzz", action="store_true",
                        help="only the fuzz suite's count and time, merged into the existing --out file")
    parser.add_argument("--only-wrap", action="store_true",
                        help="only the wrap's overhead (bench/wrap_bench.py), merged into the existing --out file")
    parser.add_argument("--only-big-script", action="store_true",
                        help="only validate and init on a 5 MB script, merged into the existing --out file")
    parser.add_argument("--only-dry-run", action="store_true",
                        help="only submit --dry-run against a bare boto3 SageMaker client, merged into the existing "
                             "--out file")
    parser.add_argument("--only-install-size", action="store_true",
                        help="only the installed size of `pip install smtrain` before (git HEAD) and after (working "
                             "tree), merged into the existing --out file")
    parser.add_argument("--before", default="HEAD", metavar="REF",
                        help="the git ref whose wheel is the install size's 'before' (default HEAD)")
    parser.add_argument("--only-throughput", action="store_true",
                        help="only the training throughput (bench/throughput_bench.py), merged into the existing "
                             "--out file")
    parser.add_argument("--only-loop", action="store_true",
                        help="only the wrapped script against a hand loop per layout (bench/loop_bench.py), merged "
                             "into the existing --out file")
    parser.add_argument("--only-check", action="store_true",
                        help="only `smtrain check` on the digits demo (bench/check_bench.py), merged into the "
                             "existing --out file")
    args = parser.parse_args()
    # One part alone, merged into the existing --out file.
    only = [(flag, key, figures) for flag, key, figures in (
        (args.only_throughput, "training_throughput", throughput_figures), (args.only_wrap, "wrap_overhead", wrap_figures),
        (args.only_masking, "secret_masking", masking_figures), (args.only_fuzz, "spec_fuzz", fuzz_figures),
        (args.only_big_script, "big_script", big_script_figures), (args.only_check, "check_digits_demo", check_figures),
        (args.only_loop, "loop_against_hand_loop", loop_figures),
        (args.only_dry_run, "dry_run_against_boto3", lambda: dry_run_against_boto3(args.repeat)),
        (args.only_install_size, "install_size", lambda: install_size_figures(args.before))) if flag]
    if only:
        _, key, figures = only[0]
        out = Path(args.out)
        results = json.loads(out.read_text()) if out.exists() else {}
        results[key] = figures()
        out.write_text(json.dumps(results, indent=2) + "\n")
        print(json.dumps(results[key], indent=2))
        return
    results: dict[str, object] = {
        "taken": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "cli_wall_time": cli_figures(args.repeat),
        "dry_run_against_boto3": dry_run_against_boto3(args.repeat),
        "install_size": install_size_figures(args.before),
        "secret_masking": masking_figures(),
        "spec_fuzz": fuzz_figures(),
        "big_script": big_script_figures(),
    }
    trainer = ROOT / "bench" / "entrypoint_bench.py"
    if not args.skip_training and trainer.exists():
        out = ROOT / "bench" / "results-entrypoint.json"
        subprocess.run([sys.executable, str(trainer), "--out", str(out)], cwd=ROOT, check=True)
        results["entrypoint_training"] = json.loads(out.read_text())
        out.unlink()
        results["wrap_overhead"] = wrap_figures()
        results["training_throughput"] = throughput_figures()
        results["loop_against_hand_loop"] = loop_figures()
        results["check_digits_demo"] = check_figures()
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
