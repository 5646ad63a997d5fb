"""The preflight scan: the user's own code read with ast (never imported or run, no TensorFlow) for what
would break or waste the job, each finding at its file:line with the fix.

It runs for own scripts (code.entry_point) in validate, plan and submit. Which files:

- every .py file the bundle ships (the caller passes them; else source_dir is walked as the bundle walks
  it, roughly) gets the API rules (names TensorFlow removed) and a syntax check;
- the files that run, the entry point and the modules of source_dir it imports (transitively), also get
  the rules that depend on the job: strategies, Keras 3's fit, CUDA_VISIBLE_DEVICES, local paths, the
  model saved by every worker, argparse against the hyperparameters. A second script beside the entry
  point is not what runs, and is not judged by this job.

A notebook entry point (train.ipynb) is scanned as the script made from it (smtrain.spec.notebook), and its
findings name the notebook's cell and the line in it, never the made script's line.

rules.py, io_rules.py, keras_rules.py and names.py hold the rules and what they
share. A finding is an error where the job would fail there for certain (validate, plan and submit then
exit 2, nothing sent), else a warning.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from smtrain.plan.distribution import version_tuple
from smtrain.preflight import channel_rules, io_rules, keras_rules, rules
from smtrain.preflight.names import Names
from smtrain.preflight.rules import ERROR, WARNING, Hit, JobContext
from smtrain.spec.notebook import NotebookError, NotebookScript, is_notebook, notebook_script, program_name, read_code
from smtrain.spec.python_file import MAX_BYTES, walk
from smtrain.spec.script_args import ScriptArgs, script_args

if TYPE_CHECKING:
    from smtrain.plan.build import Plan

NOTE = "note"  # a file the scan did not read (too large, too deep, past MAX_SCAN_BYTES): said, never blocks
# All the Python one scan reads, the files that run first: a source_dir that vendors a library holds
# megabytes of it, and every megabyte costs seconds and hundreds of MB of memory to parse and walk.
MAX_SCAN_BYTES = 1_000_000

@dataclass(frozen=True)
class Finding:
    file: str  # relative to code.source_dir, with /
    line: int
    rule: str
    message: str
    fix: str
    severity: str = WARNING  # ERROR: the job would fail for certain; nothing is sent
    cell: int | None = None  # a notebook's finding: its cell (from 1, every cell counted), `line` in that cell

    @property
    def where(self) -> str:
        return place(self.file, self.line, self.cell)

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    @property
    def is_note(self) -> bool:
        """Not a finding about the code: a file the scan did not read, and why (never blocks, not even --strict)."""
        return self.severity == NOTE

    def to_dict(self) -> dict[str, Any]:
        found = {"file": self.file, "line": self.line, "rule": self.rule, "message": self.message, "fix": self.fix,
                 "severity": self.severity}
        return found if self.cell is None else {**found, "cell": self.cell}

    def render(self, label: str | None = None) -> str:
        if self.is_note:
            return f"note: {self.file}: {self.message}"
        return f"{self.where}: {label or self.severity}: {self.message} (fix: {self.fix})"


def place(file: str, line: int, cell: int | None = None) -> str:
    """`train.py:12`, or a notebook's `train.ipynb, cell 3, line 2`."""
    return f"{file}:{line}" if cell is None else f"{file}, cell {cell}, line {line}"


class _Notebooks:
    """The notebooks among the files (a path ending .ipynb, shipped as the script made from it under `rel`): their
    scripts read, and a script's lines named by the notebook's cells."""

    def __init__(self, files: Sequence[tuple[str, Path]]) -> None:
        self.scripts: dict[str, NotebookScript] = {}
        for rel, path in files:
            if is_notebook(path.name):
                try:
                    self.scripts[rel] = notebook_script(path, _notebook_of(rel, path))
                except NotebookError:
                    pass  # the spec's check refuses it; the scan says it did not read it

    def name(self, rel: str) -> str:
        """The file a person knows: the notebook, for the script made from it."""
        script = self.scripts.get(rel)
        return script.notebook if script is not None else rel

    def locate(self, rel: str, line: int) -> tuple[str, int, int | None]:
        """(file, line, cell) of line `line` of `rel`, in the notebook's terms where `rel` is one's script."""
        script = self.scripts.get(rel)
        found = script.locate(line) if script is not None else None
        if script is None or found is None:
            return rel, line, None  # not a notebook's, or the script's own header
        return script.notebook, found[1], found[0]


def _notebook_of(rel: str, path: Path) -> str:
    """The notebook's own path in source_dir, for the script made from it that ships as `rel`."""
    return str(PurePosixPath(rel).parent / path.name).removeprefix("./")


def context_of(plan: Plan) -> JobContext:
    spec = plan.spec
    legacy = (spec.tensorflow.keras == 2
              or str(spec.environment.get("TF_USE_LEGACY_KERAS", "")).strip().lower() in ("1", "true", "yes"))
    version = plan.framework_version
    keras3 = None if not version else (version_tuple(version) >= (2, 16) and not legacy)
    processes = plan.nodes * (plan.processes_per_host if plan.strategy in rules.MPI_STRATEGIES else 1)
    return JobContext(nodes=plan.nodes, gpus=plan.instance.gpus, strategy=plan.strategy, processes=processes,
                      wrapped=bool(spec.code.wrap), keras3=keras3, framework_version=version,
                      hyperparameters=tuple(plan.hyperparameters), channels=tuple(spec.inputs),
                      tf_config=any(h.tf_config for h in plan.launch) or "TF_CONFIG" in (plan.spec.environment or {}),
                      own_script=spec.code.entry_point is not None)


@dataclass
class _Parsed:
    rel: str
    tree: ast.Module | None
    problem: Hit | None  # why it could not be read: a finding
    skipped: str | None = None  # not read (too large, too deep): a note, no finding


def _python_tag(py_version: str | None) -> tuple[int, int] | None:
    """py39 -> (3, 9); None when unknown."""
    if py_version and py_version.startswith("py3") and py_version[3:].isdigit():
        return 3, int(py_version[3:])
    return None


def _parse(rel: str, path: Path, container: tuple[int, int] | None) -> _Parsed:
    try:
        read = read_code(path, _notebook_of(rel, path))  # a notebook: the script made from it
    except OSError as exc:
        return _Parsed(rel, None, Hit(1, "unreadable", f"cannot be read: {exc.strerror or exc}",
                                      "make the file readable, or leave it out with .smtrainignore"))
    if read.skipped is not None:
        # A notebook that cannot become a script: the spec's check names its problems, each at its cell.
        return _Parsed(rel, None, None, None if is_notebook(path.name) else read.skipped)
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if read.syntax_error is not None:
        exc = read.syntax_error
        note = ""
        if container and container > sys.version_info[:2]:
            note = f"; the container's Python {container[0]}.{container[1]} may accept it"
        return _Parsed(rel, None, Hit(exc.lineno or 1, "syntax-error",
                                      f"cannot be parsed by Python {here}: {exc.msg or exc}{note}",
                                      "fix the syntax: a file that does not parse fails the job where it is imported"))
    tree = read.tree
    if container and container < sys.version_info[:2] and container >= (3, 7):
        try:
            ast.parse(read.data, filename=rel, feature_version=container)
        except SyntaxError as exc:
            return _Parsed(rel, tree, Hit(exc.lineno or 1, "python-version",
                                          f"uses syntax newer than the container's Python {container[0]}."
                                          f"{container[1]}: {exc.msg}",
                                          "write it for that Python, or choose a newer tensorflow.version "
                                          "(its image has a newer Python)"))
        except (RecursionError, MemoryError):
            pass  # read once already within the bounds; the older grammar is not worth a failure
    return _Parsed(rel, tree, None)


def _module_candidates(dotted: str, base: PurePosixPath) -> list[str]:
    parts = dotted.split(".")
    out = []
    for i in range(1, len(parts) + 1):  # a.b.c imports a, a.b and a.b.c
        stem = base.joinpath(*parts[:i])
        out += [f"{stem}.py", f"{stem}/__init__.py"]
    return [c.removeprefix("./") for c in out]


def _imports(tree: ast.AST, rel: str, known: set[str]) -> set[str]:
    """Files of source_dir that this file imports: from the code directory (where SageMaker starts the
    script) or from the file's own directory."""
    here = PurePosixPath(rel).parent
    roots = {PurePosixPath("."), here}
    found: set[str] = set()
    for node in walk(tree):
        names: list[str] = []
        bases = roots
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here
                for _ in range(node.level - 1):
                    base = base.parent
                bases = {base}
                names = [f"{node.module}.{a.name}" if node.module else a.name for a in node.names]
            else:
                names = [f"{node.module}.{a.name}" for a in node.names] if node.module else []
        for dotted in names:
            for base in bases:
                found.update(c for c in _module_candidates(dotted, base) if c in known)
    found.discard(rel)
    return found


def _running(entry: str, parsed: dict[str, _Parsed]) -> list[str]:
    """The entry point and what it imports from source_dir, transitively, in the order found."""
    known = set(parsed)
    order, todo = [], [entry]
    while todo:
        rel = todo.pop(0)
        if rel in order or rel not in parsed:
            continue
        order.append(rel)
        tree = parsed[rel].tree
        if tree is not None:
            todo += sorted(_imports(tree, rel, known) - set(order))
    return order


def _grouped(rel: str, hits: Iterable[Hit], notebooks: _Notebooks) -> list[Finding]:
    """One finding per rule and message in a file: the first line, with the other lines named (a notebook's
    script: by the notebook's cells and lines)."""
    by_key: dict[tuple[str, str], list[Hit]] = {}
    for hit in hits:
        by_key.setdefault((hit.rule, hit.message), []).append(hit)
    found = []
    for (rule, message), same in by_key.items():
        lines = sorted({h.line for h in same})
        places = [notebooks.locate(rel, line) for line in lines]
        file, line, cell = places[0]
        if cell is None:
            others = ", ".join(str(p[1]) for p in places[1:])
            more = f" (also line{'s' if len(lines) > 2 else ''} {others})" if len(lines) > 1 else ""
        else:
            more = f" (also {', '.join(f'cell {c}, line {n}' for _, n, c in places[1:])})" if len(lines) > 1 else ""
        found.append(Finding(file, line, rule, message + more, same[0].fix,
                             ERROR if any(h.severity == ERROR for h in same) else WARNING, cell))
    return found


def _script_args(running: list[str], parsed: dict[str, _Parsed]) -> tuple[ScriptArgs, dict[int, str],
                                                                          list[tuple[str, ScriptArgs]]]:
    """The parser may be built in the entry point or in a module it imports: the declarations of every
    file that runs count together. (merged, option id -> its file, (file, its own) per file)"""
    merged, files_of, per_file = ScriptArgs(), {}, []
    for rel in running:
        tree = parsed[rel].tree
        if tree is None:
            continue
        args = script_args(tree)
        files_of.update({id(option): rel for option in args.options})
        per_file.append((rel, args))
        merged = merged.merged(args)
    return merged, files_of, per_file


def _model_dir_dest(merged: ScriptArgs) -> str | None:
    """Where the script keeps the `--model_dir s3://...` SageMaker passes it: the attribute of its args."""
    option = merged.option_for("model_dir") if merged.parses else None
    return option.dest if option is not None and option.takes_value else None


def _argparse_findings(running: list[str], parsed: dict[str, _Parsed], job: JobContext) -> list[tuple[str, Hit]]:
    """The finding about the command line sits at the call that parses it."""
    merged, files_of, per_file = _script_args(running, parsed)
    parsing = [(rel, args) for rel, args in per_file if args.strict] or [(rel, a) for rel, a in per_file if a.parses]
    if not parsing:
        return []
    rel, args = parsing[0]
    return list(rules.argparse_hits(merged, job, (rel, args.parse_line or 1), files_of))


def _read(entry_point: str, files: Sequence[tuple[str, Path]], py_version: str | None
          ) -> tuple[dict[str, _Parsed], list[str]]:
    """Every file parsed (the entry point first, then by path) until MAX_SCAN_BYTES are read, and the ones
    that run (the entry point first)."""
    container = _python_tag(py_version)
    parsed: dict[str, _Parsed] = {}
    budget, unread = MAX_SCAN_BYTES, []
    for rel, path in sorted(files, key=lambda item: (item[0] != entry_point, item[0])):
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # _parse says why it cannot be read
        if budget < size <= MAX_BYTES:
            unread.append(rel)
            continue
        result = _parse(rel, path, container)
        if result.tree is not None:
            budget -= size
        parsed[rel] = result
    if unread:
        first = unread[0]
        more = f" and {len(unread) - 1} more file{'s' if len(unread) > 2 else ''}" if len(unread) > 1 else ""
        parsed[first] = _Parsed(first, None, None, f"not read{more}: the scan reads {MAX_SCAN_BYTES // 10**6} MB "
                                                   "of Python in all, the entry point first")
    return parsed, _running(entry_point, parsed)


def _note(item: _Parsed, notebooks: _Notebooks) -> Finding:
    message = item.skipped or ""
    return Finding(notebooks.name(item.rel), 1, "not-read", f"{message}; the preflight scan skipped it", "",
                   NOTE)


def _rule_hits(tree: ast.Module, runs: bool, job: JobContext, model_dir: str | None) -> list[Hit]:
    """The API rules' hits in a file; with the job's rules for a file that runs."""
    names = Names(tree)
    found = list(rules.api_hits(tree, names))
    if runs:
        for rule in (rules.strategy_hits, rules.fit_hits, io_rules.path_hits,
                     io_rules.save_hits, keras_rules.lr_hits, keras_rules.save_format_hits, keras_rules.removed_api_hits,
                     keras_rules.model_without_call_hits,
                     rules.wrap_strategy_hits, rules.job_shape_hits):
            found += rule(tree, names, job)
        found += rules.cuda_hits(tree, names)
        found += io_rules.opt_ml_hits(tree, names)
        found += io_rules.model_dir_hits(tree, names, job, model_dir)
        if job.own_script:
            found += channel_rules.channel_hits(tree, names, job)
    return found


def scan_files(entry_point: str, files: Sequence[tuple[str, Path]], job: JobContext,
               py_version: str | None = None) -> list[Finding]:
    """Every finding for a job whose code is `files` ((relative path, file)), run as `entry_point`. A file
    whose path ends .ipynb is a notebook shipped as the script made from it under its relative path."""
    parsed, running = _read(entry_point, files, py_version)
    notebooks = _Notebooks(files)
    try:
        model_dir = _model_dir_dest(_script_args(running, parsed)[0])
    except (RecursionError, MemoryError):
        model_dir = None
    hits: dict[str, list[Hit]] = {rel: [] for rel in parsed}
    for rel, item in parsed.items():
        if item.problem is not None:
            hits[rel].append(item.problem)
        if item.tree is None:
            continue
        try:
            hits[rel] += _rule_hits(item.tree, rel in running, job, model_dir)
        except (RecursionError, MemoryError):  # bounded by MAX_DEPTH; this is the guard behind it
            item.skipped = "too deeply nested to scan"
            hits[rel] = []
    try:
        argparse_hits = _argparse_findings(running, parsed, job)
    except (RecursionError, MemoryError):
        argparse_hits = []
    for rel, hit in argparse_hits:
        hits[rel].append(hit)
    findings = [f for rel, found in hits.items() for f in _grouped(rel, found, notebooks)]
    findings += [_note(item, notebooks) for item in parsed.values() if item.skipped]
    # The entry point first, then the files that run, then the rest; each by line.
    rank = {name: i for i, rel in enumerate(running) for name in {rel, notebooks.name(rel)}}
    return sorted(findings, key=lambda f: (rank.get(f.file, len(rank)), f.file, f.cell or 0, f.line, f.rule))


def _entry(entry_point: str) -> str:
    """The file the job runs, as the bundle holds it (a notebook: the script made from it)."""
    if is_notebook(entry_point):
        return program_name(entry_point)
    return PurePosixPath(entry_point.replace("\\", "/")).as_posix().removeprefix("./")


@dataclass(frozen=True)
class StandIn:
    """A strategy a wrapped script builds itself, and what the wrap gives it instead."""

    file: str
    line: int
    builds: str  # MirroredStrategy()
    becomes: str  # the job's multi_worker_mirrored strategy (2 hosts x 4 replicas)
    cell: int | None = None  # a notebook's: its cell, `line` in that cell

    def to_dict(self) -> dict[str, Any]:
        found = {"file": self.file, "line": self.line, "builds": self.builds, "becomes": self.becomes}
        return found if self.cell is None else {**found, "cell": self.cell}

    def render(self) -> str:
        return f"{place(self.file, self.line, self.cell)} builds {self.builds}: under the wrap it is {self.becomes}"


def _job_strategy(plan: Plan) -> str:
    per_host = max(1, plan.replicas // max(1, plan.nodes))
    hosts = f"{plan.nodes} host{'s' if plan.nodes != 1 else ''}"
    shape = f"{hosts} x {per_host} replica{'s' if per_host != 1 else ''}"
    if plan.strategy == "none":
        return f"the job's default strategy, one device ({shape})"
    return f"the job's {plan.strategy} strategy ({shape})"


def stand_ins(plan: Plan, files: Sequence[tuple[str, Path]]) -> list[StandIn]:
    """For a wrapped script: each MirroredStrategy() / MultiWorkerMirroredStrategy() it builds in the files
    that run, which the wrap answers with the job's strategy; [] for any other program."""
    code = plan.spec.code
    if not code.wrap or code.entry_point is None:
        return []
    files = _with_entry(plan, files)
    parsed, running = _read(_entry(code.entry_point), files, plan.py_version)
    notebooks = _Notebooks(files)
    found = []
    for rel in running:
        tree = parsed[rel].tree
        if tree is None:
            continue
        try:
            built_here = list(rules.strategies_of(tree, Names(tree)))
        except (RecursionError, MemoryError):
            continue  # the scan says the file was not read
        for built in built_here:
            if built.name in rules.WRAP_STANDS_FOR and not built.explicit:
                file, line, cell = notebooks.locate(rel, built.line)
                found.append(StandIn(file, line, built.call, _job_strategy(plan), cell))
    rank = {name: i for i, rel in enumerate(running) for name in {rel, notebooks.name(rel)}}
    return sorted(found, key=lambda s: (rank[s.file], s.cell or 0, s.line))


def _with_entry(plan: Plan, files: Sequence[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """The shipped files, and the entry point even where an ignore rule leaves it out (the job starts it)."""
    code = plan.spec.code
    files = list(files)
    if code.entry_point is None or code.source_dir is None:
        return files
    source = (plan.base_dir / code.source_dir).resolve()
    entry = _entry(code.entry_point)
    own = source / code.entry_point  # a notebook's script ships under another name than the file's
    if entry not in {rel for rel, _ in files} and own.is_file():
        files.append((entry, own))
    return files


def scan(plan: Plan, files: Sequence[tuple[str, Path]]) -> list[Finding]:
    """The findings for this plan's own script; [] for the bundled entrypoint.

    `files`: the .py files the bundle ships, (path in source_dir, file), as smtrain.bundle lists them
    (the bundle's ignore rules are the one list of what ships).
    """
    code = plan.spec.code
    if code.entry_point is None or code.source_dir is None:
        return []
    return scan_files(_entry(code.entry_point), _with_entry(plan, files), context_of(plan), plan.py_version)
