"""Mutation testing of smtrain's core modules with cosmic-ray, sampled to fit a time budget (`make mutation`).

Each group is a set of modules and the fast tests that hold them. Every group gets a copy of the working tree
of its own (cosmic-ray writes each mutant into the module's file, so two groups in one tree would test each
other's mutants), cosmic-ray lists the group's mutants there, a random sample of them sized to the group's
share of the budget is run (the rest are marked skipped), and the report counts what the tests killed. A
mutant the tests let through is written to the survivors file with its diff: a test to add, or an
equivalent mutant to say why of.

Run it with the cosmic-ray environment's Python (the Makefile builds it); the tests run with the project's
.venv, given as --python:

    .venv-mutation/bin/python -m tests.tools.mutation --python .venv/bin/python --minutes 30

Not part of CI: a sample of mutants is a measurement, not a pass/fail of a change.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import json
import math
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ANNOTATION = "in a type hint"


@dataclasses.dataclass(frozen=True)
class Group:
    name: str
    modules: tuple[str, ...]
    tests: tuple[str, ...]


# The tests are each module's own fast ones: a mutant runs them all when it survives, so a slow test (a real
# training, a fuzz run, a kernel) would spend the budget on few mutants. spec/notebook.py is left out: its
# tests start Jupyter kernels (about 40 s a run).
GROUPS = (
    Group(
        "spec",
        tuple(
            f"smtrain/spec/{name}.py"
            for name in ("model", "fields", "capacity", "local_uri", "patterns")
        ),
        tuple(
            f"tests/spec/{name}.py"
            for name in (
                "test_spec", "test_value_rules", "test_yaml_hardening", "test_tuning_spec",
                "test_capacity_spec", "test_own_script_spec", "test_trailing_newline", "test_script_args",
                "test_starter", "test_tensorboard_field", "test_schema_agreement", "test_limits",
            )
        ),
    ),
    Group(
        "plan",
        tuple(
            f"smtrain/plan/{name}.py"
            for name in (
                "build", "catalog", "choices", "distribution", "entrypoint_rules", "instance_choice",
                "job_cost", "job_places", "keras_choice", "launch", "program", "tf_image_choice", "tuning",
            )
        ),
        ("tests/plan",),
    ),
    Group(
        "render",
        ("smtrain/render/training_request.py", "smtrain/render/request_limits.py",
         "smtrain/render/tuning_request.py", "smtrain/render/checked_plan.py"),
        ("tests/render/test_training_request.py", "tests/render/test_service_limits.py",
         "tests/plan/test_program.py", "tests/plan/test_tuning_plan.py"),
    ),
    Group(
        "bundle-secrets",
        ("smtrain/bundle/secret_content.py", "smtrain/bundle/secret_guard.py"),
        ("tests/bundle/test_secret_files.py", "tests/bundle/test_bundle.py"),
    ),
    Group("sagemaker-create", ("smtrain/sagemaker/create.py",), ("tests/sagemaker/test_submit_parts.py",)),
    Group("check-verdict", ("smtrain/local/check_verdict.py",), ("tests/local/test_check_verdict.py",)),
    Group("redact", ("smtrain/redact/__init__.py", "smtrain/redact/secret_values.py"), ("tests/test_redact.py",)),
)

# tests/plan holds three slow files (a real plan of big inputs, the catalog CLI, the SDK v3 venv): left out.
_SLOW_PLAN_TESTS = ("test_big_inputs.py", "test_catalog_cli.py", "test_tf_registries_sdk.py")


def _test_command(python: str, group: Group) -> str:
    ignores = [f"--ignore=tests/plan/{name}" for name in _SLOW_PLAN_TESTS] if "tests/plan" in group.tests else []
    # -x: a killed mutant stops at its first failing test; -p no:cacheprovider: nothing written in the copy.
    return shlex.join([python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *ignores, *group.tests])


def _copy_tree(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


@dataclasses.dataclass
class Prepared:
    group: Group
    work: Path
    mutants: int
    baseline_s: float
    hints: int = 0
    sampled: int = 0


def _prepare(group: Group, python: str, scratch: Path) -> Prepared:
    work = scratch / group.name
    work.mkdir()
    _copy_tree(work)
    _cosmic_ray("init", _write_config(work, group, python, timeout_s=600), cwd=work)
    started = time.monotonic()
    code, out = _started(shlex.split(_test_command(python, group)), work)
    baseline_s = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"mutation: {group.name}: the tests fail without any mutant:\n{out[-3000:]}")
    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(work / "session.sqlite"), WorkDB.Mode.open) as db:
        mutants = db.num_work_items
    prepared = Prepared(group, work, mutants, baseline_s)
    prepared.hints = _set_aside_annotations(prepared)
    return prepared


def _write_config(work: Path, group: Group, python: str, timeout_s: float) -> Path:
    config = work / "cosmic-ray.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(list(group.modules))}\n"
        f"timeout = {timeout_s:.1f}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(_test_command(python, group))}\n"
        "[cosmic-ray.distributor]\nname = \"local\"\n"
    )
    return config


def _cosmic_ray(command: str, config: Path, cwd: Path) -> None:
    # Its console script beside this Python: the package has no __main__.
    code, out = _started([str(Path(sys.executable).parent / "cosmic-ray"), command, str(config), "session.sqlite"],
                         cwd)
    if code != 0:
        raise SystemExit(f"mutation: cosmic-ray {command} failed in {cwd.name}:\n{out[-3000:]}")


_RUNNING: set[subprocess.Popen[str]] = set()


def _started(command: list[str], cwd: Path) -> tuple[int, str]:
    """Run `command` in a session of its own (its exit code, its output), so that an interrupted run can end
    it and whatever it started (pytest's subprocesses included) before the copies are removed."""
    proc = subprocess.Popen(command, cwd=cwd, env=_env(cwd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    _RUNNING.add(proc)
    try:
        out, _ = proc.communicate()
    finally:
        _RUNNING.discard(proc)
    return proc.returncode, out


def _in_lanes(work: Callable[[Any], Any], items: list[Any], lanes: int) -> list[Any]:
    """work(item) for every item, `lanes` at once; on Ctrl-C or SIGTERM every process started is ended first
    (the pool waits for its threads, which wait for their processes)."""
    with ThreadPoolExecutor(lanes) as pool:
        try:
            return list(pool.map(work, items))
        except BaseException:
            for proc in list(_RUNNING):
                # cosmic-ray runs each pytest in a session of its own: its descendants are ended one by one.
                for pid in [proc.pid, *_descendants(proc.pid)]:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            raise


def _descendants(pid: int) -> list[int]:
    """The processes below `pid`, read from /proc (Linux; elsewhere none are found and only `pid` is ended)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, pending = [], [pid]
    while pending:
        below = children.get(pending.pop(), [])
        found += below
        pending += below
    return found


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _env(work: Path) -> dict[str, str]:
    # The copy's smtrain, not the editable install's, in the tests and in every process they start.
    return {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}


def _annotation_spans(module: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The spans of a module's functions' type hints: their signatures' and their local variables'. A class's
    field hints are left in: pydantic evaluates them."""
    spans = []
    for function in ast.walk(ast.parse(module.read_text())):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = function.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
        hints = [function.returns, *(a.annotation for a in every if a is not None)]
        hints += [node.annotation for node in ast.walk(function) if isinstance(node, ast.AnnAssign)]
        spans += [((h.lineno, h.col_offset), (h.end_lineno, h.end_col_offset)) for h in hints if h is not None]
    return spans


def _in_annotation(item, spans: dict[str, list]) -> bool:
    return all(
        any(start <= tuple(m.start_pos) < end for start, end in spans[str(m.module_path)]) for m in item.mutations
    )


def _set_aside_annotations(prepared: Prepared) -> int:
    """Mutants of functions' type hints, marked skipped: the modules import `annotations` from __future__, so
    such a hint is never evaluated and its mutant is equivalent (`int | None` made `int ** None`)."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    spans = {name: _annotation_spans(prepared.work / name) for name in prepared.group.modules}
    with use_db(str(prepared.work / "session.sqlite"), WorkDB.Mode.open) as db:
        hints = [item.job_id for item in db.pending_work_items if _in_annotation(item, spans)]
        if hints:
            db.set_multiple_results(hints, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=ANNOTATION))
    return len(hints)


def _sample(prepared: Prepared, count: int, rng: random.Random) -> int:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(str(prepared.work / "session.sqlite"), WorkDB.Mode.open) as db:
        # Job ids are random: the sample is drawn from the mutants in their order in the code, so that one
        # seed draws the same mutants of the same code.
        ids = [item.job_id for item in sorted(db.pending_work_items, key=_mutation_key)]
        kept = set(rng.sample(ids, min(count, len(ids))))
        left = [job_id for job_id in ids if job_id not in kept]
        if left:
            db.set_multiple_results(left, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="sampled out"))
    return len(kept)


def _mutation_key(item) -> tuple:
    return tuple((str(m.module_path), m.start_pos, m.operator_name, m.occurrence) for m in item.mutations)


def _run(prepared: Prepared, python: str, timeout_s: float) -> None:
    _cosmic_ray("exec", _write_config(prepared.work, prepared.group, python, timeout_s), cwd=prepared.work)


def _collect(prepared: Prepared) -> tuple[dict, list[str]]:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    counts = {"mutants": prepared.mutants, "in_type_hints": prepared.hints, "sampled": 0, "killed": 0, "survived": 0,
              "incompetent": 0, "timeout": 0}
    survivors = []
    with use_db(str(prepared.work / "session.sqlite"), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            counts["sampled"] += 1
            if result.test_outcome == TestOutcome.SURVIVED:
                counts["survived"] += 1
                mutation = item.mutations[0]
                survivors.append(
                    f"## {mutation.module_path}:{mutation.start_pos[0]} {mutation.operator_name}"
                    f" (occurrence {mutation.occurrence})\n{result.diff}\n"
                )
            elif result.test_outcome == TestOutcome.INCOMPETENT or result.worker_outcome != WorkerOutcome.NORMAL:
                counts["incompetent"] += 1
            else:
                counts["killed"] += 1
                counts["timeout"] += result.output == "timeout"
    tested = counts["killed"] + counts["survived"]
    counts["killed_percent"] = round(100 * counts["killed"] / tested, 1) if tested else None
    return counts, survivors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the Python of the project's environment (.venv)")
    parser.add_argument("--minutes", type=float, default=30.0, help="the time budget of the mutants' runs")
    parser.add_argument("--jobs", type=int, default=2, help="groups run at once (one pytest each)")
    parser.add_argument("--seed", type=int, default=0,
                        help="the sample's seed: the same seed and --per-group, the same mutants of the same code")
    parser.add_argument("--per-group", type=int, help="mutants drawn per group (default: as many as fit --minutes)")
    parser.add_argument("--group", action="append", choices=[g.name for g in GROUPS], help="only these groups")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "mutation")
    parser.add_argument("--fail-under", type=float, default=90.0, help="exit 1 below this percentage killed")
    args = parser.parse_args(argv)
    groups = [g for g in GROUPS if not args.group or g.name in args.group]
    python = str(Path(args.python).absolute())

    signal.signal(signal.SIGTERM, _terminated)  # as Ctrl-C: the processes ended, the copies removed
    scratch = Path(tempfile.mkdtemp(prefix="smtrain-mutation-"))
    try:
        prepared = _in_lanes(lambda g: _prepare(g, python, scratch), groups, args.jobs)
        # Each group gets the same number of mutants (each module set counts alike in the figure), as many as
        # fit the budget when a mutant costs its group's baseline (a killed one costs less: it stops at its
        # first failure).
        lane_seconds = args.minutes * 60 * args.jobs
        per_group = args.per_group or max(1, math.floor(lane_seconds / sum(p.baseline_s for p in prepared)))
        rng = random.Random(args.seed)
        for p in prepared:
            p.sampled = _sample(p, per_group, rng)
            print(f"mutation: {p.group.name}: {p.sampled} of {p.mutants} mutants sampled "
                  f"(tests {p.baseline_s:.1f} s a run)", flush=True)
        prepared.sort(key=lambda p: p.sampled * p.baseline_s, reverse=True)  # the longest first: lanes end together
        _in_lanes(lambda p: _run(p, python, max(60.0, 5 * p.baseline_s)), prepared, args.jobs)
        report = {"seed": args.seed, "minutes": args.minutes, "groups": {}}
        all_survivors = []
        for p in prepared:
            counts, survivors = _collect(p)
            report["groups"][p.group.name] = {**counts, "modules": list(p.group.modules), "tests": list(p.group.tests)}
            all_survivors += survivors
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    killed = sum(g["killed"] for g in report["groups"].values())
    tested = killed + sum(g["survived"] for g in report["groups"].values())
    report["killed_percent"] = round(100 * killed / tested, 1) if tested else None
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "survivors.txt").write_text("".join(all_survivors) or "no mutant survived\n")
    for name, g in report["groups"].items():
        print(f"{name:18} {g['killed']:4d} killed {g['survived']:4d} survived {g['incompetent']:3d} incompetent"
              f"  of {g['sampled']} sampled ({g['mutants']} mutants, {g['in_type_hints']} in type hints not run):"
              f" {g['killed_percent']}% killed")
    print(f"total: {report['killed_percent']}% of {tested} sampled mutants killed; "
          f"survivors in {args.out / 'survivors.txt'}")
    return 0 if tested and report["killed_percent"] >= args.fail_under else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("mutation: interrupted: every process it started ended, its copies removed", file=sys.stderr)
        sys.exit(130)
