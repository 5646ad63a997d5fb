"""A Jupyter notebook as the script a job runs (`code.entry_point: train.ipynb`): read with nbformat, turned into
one Python script deterministically, every problem named by the notebook's cell and the line in it.

The script (NotebookScript.text): a header of comments (then the notebook's leading future imports and the few
helpers below, only those it uses), then each code cell in order after a marker line `# %% train.ipynb cell N`. N
counts every cell of the notebook from 1, markdown and raw ones too, as a person scrolling the notebook counts them
(Jupyter shows no numbers of its own: an execution count changes with every run). Markdown and raw cells, outputs,
execution counts and metadata never reach the script, so re-running the notebook changes neither the script nor the
bundle's sha256. Every line of a cell stays one line of the script (a magic becomes the one line of Python it
stands for, or a comment), so a script line is its cell's line by subtraction; the wrap reads the markers back in
the container (entrypoints/smtrain_tf/wrap/notebook_lines.py) without a side file.

IPython's escapes, where IPython sees them (at the start of a logical line, so never inside a string):

- display-only magics become comments: %matplotlib, %config, %load_ext, %reload_ext, %autoreload, %tensorboard,
  %who, %whos, `obj?` help lines...; a %%html, %%javascript, %%markdown, %%latex or %%svg cell is left out whole;
- `%time stmt` and `%timeit stmt` run stmt once; a %%time, %%timeit or %%capture cell runs its body;
- `%env NAME=value` sets os.environ; `%cd dir` changes directory (a job starts in its code directory, the
  notebook's when it sits at the root of source_dir: the relative paths the notebook used keep their meaning);
- `!cmd` (and %%bash, %%sh cells) run through the shell, unchecked, as IPython runs them (its escapes `$$x`,
  `{{`, `}}` undone where IPython undoes them); %%writefile writes;
- refused, at their cell and line, with the fix: !pip / %pip / !conda / %conda (a job's packages come from
  code.requirements), `x = !cmd` and `x = %magic` (nothing is captured), a Python value put into a command
  (`{var}`, `$var` naming one of the notebook's names), get_ipython(), any other magic ("unknown magic %foo"),
  and a syntax error.

Python code that Jupyter runs cell by cell but a script cannot hold is refused too: each cell is compiled
(not only parsed) as the script will be, so top-level `await` (Jupyter's event loop is not there in a script),
`return` or `yield` is named at its cell and line. `from __future__ import ...` before any other code of the
notebook (the first code cell's first lines) moves to the top of the script, where Python takes it, and applies
to every cell after it as in Jupyter; its lines in the cell become comments. A future import after other code
is refused: in a script it could not apply to the cells before it.

A notebook is often its own launcher: a statement that imports smtrain, runs `!smtrain`, or reads a name only such
statements made (`job.metrics()` after `job = smtrain.submit(...)`) becomes comments in the script, line for
line, and the bundle's warnings name each (smtrain is not in the job's image, and a job must not launch itself).

A notebook that is not JSON, that nbformat's schema refuses, or whose kernel is not Python is refused whole.
`display(...)` without an import of its own gets a stand-in that prints (a job has no notebook to show in).
"""

from __future__ import annotations
import __future__  # the flags a moved future import sets for the cells after it

import ast
import builtins
import json
import os
import posixpath
import re
import shlex
import stat
import string
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from smtrain.spec.python_file import PythonFile, parse_python, read_python

SUFFIX = ".ipynb"
# A notebook's outputs (plots, tables) make it far larger than its code; past this it holds data.
MAX_NOTEBOOK_BYTES = 50_000_000
HEADER = "# Made by smtrain from the notebook "  # the wrap recognises a notebook's script by this first line
MARKER = "# %% {notebook} cell {cell}"
_MAX_PROBLEMS = 20  # a notebook that is wrong everywhere is named by its first problems

# Magics that only change what Jupyter shows (or its own state): a job has nothing to show them in.
_DROPPED = frozenset({"matplotlib", "config", "load_ext", "reload_ext", "unload_ext", "autoreload", "aimport",
                      "tensorboard", "who", "whos", "pinfo", "pinfo2", "xmode", "pwd", "lsmagic", "autosave",
                      "precision"})
_DROPPED_CELLS = frozenset({"html", "javascript", "js", "markdown", "latex", "svg"})
_BODY_CELLS = frozenset({"time", "timeit", "capture"})
_SHELL_CELLS = {"bash": "/bin/bash", "sh": "/bin/sh"}
_PACKAGERS = frozenset({"pip", "pip3", "conda", "mamba", "micromamba"})
# pip/conda options that take the next word as their value (not a package).
_VALUE_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
                            "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--upgrade-strategy",
                            "-n", "--name", "-p", "--channel", "--platform", "--python-version"})

# `lhs = !cmd` and `lhs = %magic`, as IPython's own transforms match them.
_ASSIGNED = re.compile(r"^([\w.]+(?:\s*,\s*[\w.]+)*)\s*=\s*([!%])")
_HELP = re.compile(r"^(?:\?{1,2}%{0,2}[\w.*]+|%{0,2}[\w.*]+\?{1,2})$")
_PACKAGER_LINE = re.compile(r"^(?:\S+\s+-m\s+)?(pip3?|conda|mamba|micromamba)(?:\s+(.*))?$")
_TIMEIT_OPTIONS = re.compile(r"(?:\s*-(?:[nrp]\s*\d+|[tcqo])(?=\s|$))*\s*")
_DOLLAR = re.compile(r"(?<!\$)\$([A-Za-z_]\w*)")
_BRACES = re.compile(r"(?<!\{)\{([^{}]+)\}(?!\})")

_SHELL_HELPER = '''\
def _smtrain_shell(command, executable=None):  # a notebook's `!` line: the shell, unchecked, as IPython runs it
    import subprocess, sys
    sys.stdout.flush(); sys.stderr.flush()
    subprocess.run(command, shell=True, executable=executable)
'''
_WRITEFILE_HELPER = '''\
def _smtrain_writefile(path, text, append=False):  # a notebook's %%writefile cell
    with open(path, "a" if append else "w", encoding="utf-8") as out:
        out.write(text + "\\n")
'''
_DISPLAY_HELPER = '''\
def display(*objs, **kwargs):  # IPython's display(): a job has no notebook to show in, so it prints
    for obj in objs:
        print(obj)
'''


def is_notebook(entry_point: str) -> bool:
    return entry_point.lower().endswith(SUFFIX)


def notebook_path(entry_point: str) -> str:
    """The entry point as a POSIX path inside the code directory: `./nb\\train.ipynb` -> `nb/train.ipynb`."""
    return posixpath.normpath(entry_point.replace("\\", "/")).removeprefix("./")


def program_name(entry_point: str) -> str:
    """The script a job runs for a notebook, beside it in the bundle: train.ipynb -> train_ipynb.py.

    Not train.py: an export of the notebook (nbconvert, jupytext) often sits beside it under that name, and a
    notebook named after a module (keras.ipynb) would become that module for its own imports, since Python
    puts the script's directory first on sys.path."""
    path = notebook_path(entry_point)
    folder, name = posixpath.split(path)
    stem = name[: -len(SUFFIX)] if is_notebook(name) else name
    return posixpath.join(folder, f"{stem}_ipynb.py")


@dataclass(frozen=True)
class NotebookProblem:
    cell: int | None  # None: the notebook as a whole
    line: int | None
    message: str

    def render(self, notebook: str) -> str:
        if self.cell is None:
            return f"{notebook}: {self.message}"
        return f"{notebook}, cell {self.cell}" + (f", line {self.line}" if self.line else "") + f": {self.message}"


class NotebookError(ValueError):
    """A notebook that cannot become a script: each problem at its cell and line (one per line of the message)."""

    def __init__(self, notebook: str, problems: list[NotebookProblem]) -> None:
        self.notebook = notebook
        self.problems = problems
        super().__init__("\n".join(p.render(notebook) for p in problems))

    def messages(self) -> list[str]:
        return [p.render(self.notebook) for p in self.problems]


@dataclass(frozen=True)
class NotebookScript:
    """The script made from a notebook, and the way back from its lines to the notebook's cells."""

    notebook: str  # the entry point: a POSIX path in the code directory (train.ipynb)
    program: str  # the script's path in the bundle (train_ipynb.py)
    text: str
    starts: tuple[tuple[int, int], ...]  # (script line of a cell's marker, cell number), in order
    # Statements left out of the job because they drive smtrain (launch or follow jobs): (cell, line, why).
    left_out: tuple[tuple[int, int, str], ...] = ()

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")

    def locate(self, line: int) -> tuple[int, int] | None:
        """(cell, line in the cell) of a script line; None for the header."""
        found = None
        for marker, cell in self.starts:
            if marker >= line:
                break
            found = (cell, line - marker)
        return found

    def where(self, line: int) -> str:
        """`train.ipynb, cell 3, line 2` for a script line (the header's lines: the script's own name and line)."""
        found = self.locate(line)
        return f"{self.notebook}, cell {found[0]}, line {found[1]}" if found else f"{self.program}:{line}"


# --- reading -------------------------------------------------------------------------------------------------


def _notebook_json(data: bytes) -> Any:
    """The notebook's cells as nbformat reads and validates them (version 4); NotebookError for the notebook."""
    import nbformat  # only a notebook entry point pays for it

    def whole(message: str) -> NotebookError:
        return NotebookError("", [NotebookProblem(None, None, message)])

    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise whole(f"byte {exc.start} is not UTF-8: not a notebook file (.ipynb is JSON text)") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise whole(f"not valid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}): a notebook file is "
                    "JSON; open it in Jupyter and save it again") from None
    except RecursionError:
        raise whole("nested too deeply to read as JSON: not a notebook") from None
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise whole("JSON, but not a notebook (no nbformat field): give a .ipynb file that Jupyter saved")
    # nbformat's converters walk these before its schema is checked, and fail with a bare TypeError on them.
    if "cells" in raw and not isinstance(raw["cells"], list):
        raise whole(f"not a valid notebook: its cells are a JSON {_json_kind(raw['cells'])}, not a list")
    for index, cell in enumerate(raw.get("cells") or []):
        if not isinstance(cell, dict):
            raise whole(f"not a valid notebook: cell {index + 1} is a JSON {_json_kind(cell)}, not an object")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbformat warns about cell ids it would add; ids are not read here
        try:
            nb = nbformat.convert(nbformat.from_dict(raw), 4)
            nbformat.validate(nb)
        except nbformat.ValidationError as exc:
            where = "/".join(str(p) for p in getattr(exc, "absolute_path", ()))
            message = getattr(exc, "message", None) or str(exc).splitlines()[0]
            raise whole(f"not a valid notebook (nbformat's schema{', at ' + where if where else ''}): "
                        f"{message[:200]}") from None
        except Exception as exc:  # noqa: BLE001 - nbformat's readers raise what the broken document makes them
            raise whole(f"not a valid notebook: {type(exc).__name__}: {str(exc)[:200]}") from None
    language = _kernel_language(nb.get("metadata") or {})
    if language is not None and language.lower() not in ("python", "python3", "ipython"):
        raise whole(f"its kernel runs {language}, not Python: smtrain runs a Python notebook's code")
    return nb


def code_cells(path: Path) -> list[tuple[int, list[str]]]:
    """A notebook's code cells as (number among all its cells, from 1; the cell's lines), read and validated as
    an entry point's are, for readers that run nothing (`smtrain import`); NotebookError for the notebook."""
    try:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            raise NotebookError(path.name, [NotebookProblem(None, None, f"over the {MAX_NOTEBOOK_BYTES // 10**6} MB "
                                                                          "smtrain reads of a notebook")])
        data = path.read_bytes()
    except OSError as exc:
        raise NotebookError(path.name, [NotebookProblem(None, None, f"cannot be read: {exc.strerror or exc}")]) from None
    try:
        nb = _notebook_json(data)
    except NotebookError as exc:
        raise NotebookError(path.name, exc.problems) from None
    return [(i + 1, _lines(_source(cell))) for i, cell in enumerate(nb.cells) if cell.get("cell_type") == "code"]


def _kernel_language(metadata: Any) -> str | None:
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        if isinstance(section, dict) and isinstance(section.get(field), str) and section[field]:
            return section[field]
    return None


def _source(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


# --- lines: where a logical line starts (IPython sees escapes only there) ---------------------------------------


def _lines(source: str) -> list[str]:
    """The cell's lines as Python's tokenizer counts them (\\r\\n, \\r and \\n end a line; nothing else does)."""
    lines = re.split(r"\r\n|\r|\n", source)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass
class _Continuation:
    """What a line leaves open for the next: a string, brackets, a backslash. A line starts a logical
    line only when none is open."""

    quote: str | None = None
    depth: int = 0
    backslash: bool = False

    @property
    def open(self) -> bool:
        return self.quote is not None or self.depth > 0 or self.backslash

    def read(self, line: str) -> None:
        i, n, quote, depth = 0, len(line), self.quote, self.depth
        while i < n:
            ch = line[i]
            if quote is not None:
                if ch == "\\":
                    i += 2
                    continue
                if line.startswith(quote, i):
                    i += len(quote)
                    quote = None
                    continue
                i += 1
                continue
            if ch == "#":
                n = i  # the rest is a comment: a backslash there continues nothing
                break
            if ch in "\"'":
                quote = line[i:i + 3] if line[i:i + 3] in ('"""', "'''") else ch
                i += len(quote)
                continue
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth = max(0, depth - 1)
            i += 1
        ends_with_backslash = line[:n].endswith("\\") and (quote is None or len(quote) == 1)
        if quote is not None and len(quote) == 1 and not ends_with_backslash:
            quote = None  # a one-line string left open: Python's syntax error, reported by the parse
        self.quote, self.depth = quote, depth
        self.backslash = ends_with_backslash and quote is None


# --- one cell ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Expanded:
    """Text IPython would expand Python values into ({x}, $x), checked once the notebook's names are known."""

    cell: int
    line: int
    text: str
    what: str  # "this shell line", "%env"


class _Cell:
    def __init__(self, number: int, source: str, problems: list[NotebookProblem], expanded: list[_Expanded],
                 helpers: set[str]) -> None:
        self.number = number
        self.lines = _lines(source)
        self.problems = problems
        self.expanded = expanded
        self.helpers = helpers
        self.dropped_as: str | None = None  # a cell magic that leaves the whole cell out
        self.python = True  # False: a cell magic's body is not Python (a shell's, a file's, an unknown magic's)

    def problem(self, line: int, message: str) -> None:
        self.problems.append(NotebookProblem(self.number, line, message))

    def convert(self) -> list[str]:
        out = list(self.lines)
        first = next((i for i, line in enumerate(out) if line.strip()), None)
        start = 0
        if first is not None and out[first].lstrip().startswith("%%"):
            if not self._cell_magic(out, first):
                self.python = False
                return out
            start = first + 1
        state = _Continuation()
        for i in range(len(out)):
            line = out[i]
            if i >= start and not state.open:
                out[i] = self._line(line, i + 1)
            state.read(out[i])
        return out

    def _cell_magic(self, out: list[str], first: int) -> bool:
        """The cell's first line, a cell magic; False when nothing of the cell runs (left out, or refused)."""
        head = out[first].strip()
        name, _, args = head[2:].partition(" ")
        name, args = name.strip(), args.strip()
        body = out[first + 1:]
        if name in _DROPPED_CELLS:
            self.dropped_as = f"%%{name}"
            return False
        if name in _BODY_CELLS:
            out[first] = f"# {head}"
            if name == "capture" and any(not word.startswith("-") for word in args.split()):
                self.problem(first + 1, f"{head}: the output it would keep in a variable is not kept when a job "
                                        "runs the notebook; remove the name (the cell's output then shows in the job's log)")
            elif name == "timeit":
                setup = _TIMEIT_OPTIONS.sub("", args, count=1)  # the rest of the first line is its setup statement
                if setup:
                    out[first] = setup
            return True
        if name in _SHELL_CELLS:
            self.helpers.add("shell")
            out[first] = f"_smtrain_shell({chr(10).join(body)!r}, executable={_SHELL_CELLS[name]!r})"
            out[first + 1:] = [f"# {line}" for line in body]
            return False
        if name == "writefile":
            words = self._words(_as_ipython_passes(args), first + 1, head)
            append = bool(words) and words[0] in ("-a", "--append")
            paths = words[1:] if append else words
            if words is not None and len(paths) == 1 and not paths[0].startswith("-"):
                self.helpers.add("writefile")
                self.expanded.append(_Expanded(self.number, first + 1, args, "%%writefile"))
                out[first] = f"_smtrain_writefile({paths[0]!r}, {chr(10).join(body)!r}, append={append})"
                out[first + 1:] = [f"# {line}" for line in body]
            elif words is not None:
                self.problem(first + 1, f"{head}: write %%writefile FILE or %%writefile -a FILE")
            return False
        self.problem(first + 1, f"unknown magic %%{name}: smtrain turns only these cell magics into Python: "
                                "%%time, %%timeit, %%capture, %%bash, %%sh, %%writefile (and leaves out %%html, "
                                "%%javascript, %%markdown, %%latex, %%svg cells); write the cell in Python")
        return False

    def _words(self, args: str, line: int, shown: str) -> list[str] | None:
        try:
            return shlex.split(args)
        except ValueError as exc:
            self.problem(line, f"{shown}: {exc}")
            return None

    def _line(self, line: str, number: int) -> str:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        text = stripped.rstrip()
        if not text:
            return line
        # Where the line would otherwise hold nothing, `pass` keeps an indented block a block.
        dropped = f"{indent}pass  # {text}" if indent else f"# {text}"
        assigned = _ASSIGNED.match(text)
        if assigned and not text.startswith(("!", "%")):
            kind = "a shell command" if assigned.group(2) == "!" else "a magic"
            self.problem(number, f"{_shown(text)}: a variable set from {kind}'s output (IPython's `x = {assigned.group(2)}"
                                 "...`) is not kept when a job runs the notebook; run it with subprocess.run("
                                 "..., capture_output=True, text=True) and read .stdout")
            return dropped
        if text.startswith("!"):
            return self._shell(text, indent, number)
        if text.startswith("%%"):
            self.problem(number, f"{_shown(text)}: a cell magic works on a cell's first line only")
            return dropped
        if text.startswith("%"):
            return self._magic(text, indent, number, dropped)
        if _HELP.match(text):
            return dropped  # `obj?` shows help in Jupyter
        packager = _PACKAGER_LINE.match(text)
        if packager and packager.group(2) and packager.group(2).split()[0] in ("install", "uninstall"):
            self._packages(text, packager, number)  # IPython's automagic runs `pip install x` without % or !
            return dropped
        return line

    def _shell(self, text: str, indent: str, number: int) -> str:
        command = text.lstrip("!").strip()
        packager = _PACKAGER_LINE.match(command)
        if packager:
            self._packages(text, packager, number)
            return f"{indent}pass  # {text}" if indent else f"# {text}"
        self.helpers.add("shell")
        self.expanded.append(_Expanded(self.number, number, command, "this shell line"))
        return f"{indent}_smtrain_shell({_as_ipython_passes(command)!r})"

    def _magic(self, text: str, indent: str, number: int, dropped: str) -> str:
        match = re.match(r"%(\w+)\s*(.*)$", text)
        if match is None:
            return indent + text  # `% x`: not a magic; the parse names the syntax error
        name, args = match.group(1), match.group(2).strip()
        if name in _DROPPED:
            return dropped
        if name in ("time", "timeit"):
            statement = _TIMEIT_OPTIONS.sub("", args, count=1) if name == "timeit" else args
            return f"{indent}{statement}" if statement else dropped
        if name in ("pip", "conda", "mamba"):
            packager = _PACKAGER_LINE.match(f"{name} {args}")
            assert packager is not None
            self._packages(text, packager, number)
            return dropped
        if name == "env":
            passed = _as_ipython_passes(args)
            var, sep, value = passed.partition("=") if "=" in passed else passed.partition(" ")
            if not sep or not var.strip():
                return dropped  # `%env` or `%env NAME` shows values
            self.expanded.append(_Expanded(self.number, number, args, "%env"))
            return f"{indent}__import__('os').environ[{var.strip()!r}] = {value.strip()!r}"
        if name == "cd":
            words = self._words(_as_ipython_passes(args), number, text)
            words = [w for w in words or () if w != "-q"] if words is not None else None
            if words is not None and (len(words) != 1 or words[0].startswith("-")):
                self.problem(number, f"{_shown(text)}: write %cd DIRECTORY (the bookmarks and history of IPython's "
                                     "%cd are not there when a job runs the notebook)")
            elif words is not None:
                self.expanded.append(_Expanded(self.number, number, args, "%cd"))
                return f"{indent}__import__('os').chdir(__import__('os').path.expanduser({words[0]!r}))"
            return dropped
        self.problem(number, f"unknown magic %{name}: smtrain turns only these magics into Python: %time, %timeit, "
                             "%env, %cd (and leaves out display ones such as %matplotlib); remove it, or write the "
                             "Python it stands for")
        return dropped

    def _packages(self, text: str, packager: re.Match[str], number: int) -> None:
        tool, args = packager.group(1), (packager.group(2) or "").split()
        command = args[0] if args else ""
        if command not in ("install", "uninstall"):
            self.problem(number, f"{_shown(text)}: {tool} works on the notebook's own environment; a job's packages "
                                 "come from code.requirements: remove this line")
            return
        names, skip = [], False
        for word in args[1:]:
            if skip:  # an option's value: an index, a channel, a requirements file, not a package
                skip = False
            elif word in _VALUE_OPTIONS:
                skip = True
            elif not word.startswith("-"):
                names.append(word)
        if command == "uninstall":
            self.problem(number, f"{_shown(text)}: a job starts from the image's packages and code.requirements; "
                                 "leave out of code.requirements what it should not have, and remove this line")
            return
        what = ", ".join(names) if names else "the packages it installs"
        self.problem(number, f"{_shown(text)}: a job installs its packages before the notebook runs, from the "
                             f"requirements file code.requirements names: put {what} in it (for example "
                             "requirements.txt in source_dir, with `requirements: requirements.txt` under code:) "
                             "and remove this line")


# IPython's own `$name` (its DollarFormatter's pattern: `$$name` is its escape for a literal `$name`; nothing
# between an odd number of single quotes after it).
_IPYTHON_DOLLAR = re.compile(r"(.*?)\$(\$?[\w.]+)(?=([^']*'[^']*')*[^']*$)")


def _as_ipython_passes(text: str) -> str:
    """The command IPython hands on when no Python value goes into it (one that would is refused: _expansion):
    its escapes undone (`$$x` -> `$x`, `{{` -> `{`, `}}` -> `}`) where it has nothing else to fill; as written
    where it has a `{...}` or `$name` it cannot fill (`$HOME`, awk's `{print}`), since IPython then leaves the
    whole line as written."""
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError:
        return text  # an unmatched brace: IPython's formatting fails, the line goes as written
    out = []
    for literal, field, _spec, _conversion in parts:
        if field is not None:
            return text
        done = 0
        for match in _IPYTHON_DOLLAR.finditer(literal):
            if not match.group(2).startswith("$"):
                return text
            out.append(match.group(1) + match.group(2))
            done = match.end()
        out.append(literal[done:])
    return "".join(out)


def _shown(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the whole notebook -----------------------------------------------------------------------------------------


def _bound_names(trees: list[ast.Module]) -> set[str]:
    """Every name the notebook binds anywhere: IPython puts such a name's value into `{x}` and `$x`."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def _expansion(text: str, bound: set[str]) -> str | None:
    """The first `{expr}` or `$name` IPython would fill with a Python value, else None."""
    known = bound | set(dir(builtins))
    for match in _BRACES.finditer(text):
        try:
            tree = ast.parse(match.group(1).strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # `{print $1}` (awk), `{a,b}` of unknown names: IPython leaves it to the shell too
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        if match.group(1).strip() and used <= known and used:
            return match.group(0)
    for match in _DOLLAR.finditer(text):
        if match.group(1) in bound:
            return match.group(0)
    return None


def _parse_cell(cell: _Cell, text: str, problems: list[NotebookProblem]) -> ast.Module | None:
    try:
        return ast.parse(text, filename=f"cell {cell.number}")
    except SyntaxError as exc:
        line = min(max(exc.lineno or 1, 1), max(len(cell.lines), 1))
        problems.append(NotebookProblem(cell.number, line, f"syntax error: {exc.msg or exc}"))
    except ValueError as exc:  # a NUL byte
        problems.append(NotebookProblem(cell.number, 1, f"syntax error: {exc}"))
    except (RecursionError, MemoryError):
        pass  # too deeply nested to check here; the preflight scan says it did not read it
    return None


def _lines_using(tree: ast.Module, name: str, bound: set[str]) -> list[int]:
    if name in bound:
        return []
    return sorted({n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
                   and isinstance(n.ctx, ast.Load)})


def _is_future(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__" and not node.level


def _leading_futures(tree: ast.Module) -> list[ast.stmt]:
    """The future imports Python takes at the start of this cell's text: after a docstring, before other code."""
    body = tree.body
    start = int(bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str))
    found = []
    for node in body[start:]:
        if not _is_future(node):
            break
        found.append(node)
    return found


def _future_names(node: ast.stmt) -> str:
    assert isinstance(node, ast.ImportFrom)
    return ", ".join(alias.name for alias in node.names)


def _compile_problem(cell: _Cell, text: str, flags: int) -> NotebookProblem | None:
    """What Python's compiler refuses in the cell that its parser took (top-level await, return, yield...)."""
    try:
        compile(text, f"cell {cell.number}", "exec", flags=flags, dont_inherit=True)
        return None
    except SyntaxError as exc:
        line = min(max(exc.lineno or 1, 1), max(len(cell.lines), 1))
        message = f"syntax error: {exc.msg or exc}"
        if (exc.msg or "").startswith("from __future__ imports"):
            message = None  # named by _futures, at every such line
        elif "outside function" in (exc.msg or "") or "outside of an asynchronous" in (exc.msg or "") \
                or "outside async function" in (exc.msg or ""):
            try:
                compile(text, f"cell {cell.number}", "exec", flags=flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                        dont_inherit=True)
                awaits = True
            except SyntaxError:
                awaits = False
            if awaits:
                message = ("await (or async for, async with) outside a function: Jupyter runs it in its kernel's "
                           "event loop, which is not there when a job runs the notebook as a script; put the code "
                           "in an `async def main():` and run it with asyncio.run(main())")
            else:
                message += " (a job runs the notebook's cells as one script: at its top level Python refuses it)"
    except (ValueError, RecursionError, MemoryError):
        return None  # what the parse let through: a NUL byte is its problem, depth the preflight scan's
    return NotebookProblem(cell.number, line, message) if message else None


@dataclass
class _Futures:
    """`from __future__` imports through the cells: the lines moved to the script's top, the flags they set for
    the cells after them, whether code came before (no future import can follow it)."""

    lines: list[str]
    flags: int = 0
    code_before: bool = False
    first_cell: int | None = None  # the first code cell with Python in it: where a future import belongs

    def take(self, cell: _Cell, lines: list[str], tree: ast.Module, problems: list[NotebookProblem]) -> None:
        """Check the cell (compiled as the script will run it); move its leading future imports to the top."""
        if self.first_cell is None:
            self.first_cell = cell.number
        text = "\n".join(lines) + "\n"
        found = _compile_problem(cell, text, self.flags)
        if found is not None:
            problems.append(found)
        moved = [] if self.code_before else _leading_futures(tree)
        shared = [node for node in moved if any(
            other is not node and other.lineno <= (node.end_lineno or node.lineno)
            and (other.end_lineno or other.lineno) >= node.lineno for other in tree.body)]
        for node in shared:
            cell.problem(node.lineno, f"from __future__ import {_future_names(node)}: put it on a line of its own "
                                      "(smtrain moves it to the top of the script, away from the rest of the line)")
        moved = [] if shared else moved
        for node in _all_futures(tree):
            if node not in moved and node not in shared:
                where = f" (cell {self.first_cell})" if self.first_cell != cell.number else ""
                cell.problem(node.lineno, f"from __future__ import {_future_names(node)} after other code: Python "
                                          "takes a future import only at the start of a file, and a job runs the "
                                          "notebook's cells as one script; put it at the top of the notebook's "
                                          f"first code cell{where}, before any other code")
        if found is None and moved:
            self.lines.append(f"# from cell {cell.number}: Python takes a __future__ import only at the start of a "
                              "file")
            for node in moved:
                first, end = node.lineno, node.end_lineno or node.lineno
                self.lines += lines[first - 1:end]
                lines[first - 1:end] = [f"# {line}" for line in lines[first - 1:end]]
                for alias in node.names:  # type: ignore[attr-defined]
                    feature = getattr(__future__, alias.name, None)
                    self.flags |= getattr(feature, "compiler_flag", 0)
        if any(node not in moved for node in tree.body):
            self.code_before = True


def _all_futures(tree: ast.Module) -> list[ast.stmt]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt) and _is_future(node)]


def make_script(data: bytes, entry_point: str) -> NotebookScript:
    """The script of the notebook `data` (the file named `entry_point` in the code directory); NotebookError
    naming every problem (at most _MAX_PROBLEMS) at its cell and line."""
    notebook, program = notebook_path(entry_point), program_name(entry_point)
    try:
        nb = _notebook_json(data)
    except NotebookError as exc:
        raise NotebookError(notebook, exc.problems) from None
    problems: list[NotebookProblem] = []
    expanded: list[_Expanded] = []
    helpers: set[str] = set()
    converted: list[tuple[_Cell, list[str]]] = []
    trees: list[tuple[_Cell, ast.Module]] = []
    futures = _Futures([])
    for number, cell in enumerate(nb.cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        one = _Cell(number, _source(cell), problems, expanded, helpers)
        lines = one.convert()
        converted.append((one, lines))
        tree = None
        if one.python:  # a refused line is a comment or `pass` now: the rest still parses
            tree = _parse_cell(one, "\n".join(lines) + "\n", problems)
            if tree is not None:
                trees.append((one, tree))
                futures.take(one, lines, tree, problems)
        if tree is None and one.dropped_as is None and any(
                line.strip() and not line.lstrip().startswith("#") for line in lines):
            futures.code_before = True  # a shell cell's call, %%writefile's: code a future import cannot follow
    bound = _bound_names([tree for _, tree in trees])
    # What drives smtrain first: a launcher's `!smtrain ... {epochs}` is left out, never refused for its {epochs}.
    left = _leave_out_launching(converted, {one.number: tree for one, tree in trees}, problems)
    gone = {(cell, n) for cell, first, last, _ in left for n in range(first, last + 1)}
    for item in expanded:
        found = _expansion(item.text, bound)
        if found and (item.cell, item.line) not in gone:
            problems.append(NotebookProblem(item.cell, item.line, f"{found} in {item.what}: IPython puts the "
                            "notebook's Python value there; a job runs the line as written. Build the command in "
                            "Python (subprocess.run(f\"...\", shell=True)), or write $$ for a shell's own $"))
    for one, tree in trees:
        for line in _lines_using(tree, "get_ipython", bound):
            if (one.number, line) not in gone:
                problems.append(NotebookProblem(one.number, line, "get_ipython() exists only inside Jupyter; a job "
                                                "runs the notebook as a Python script: write the Python the call "
                                                "stands for"))
    left_out = [(cell, first, why) for cell, first, _, why in left]
    if problems:
        problems.sort(key=lambda p: (p.cell or 0, p.line or 0))
        raise NotebookError(notebook, problems[:_MAX_PROBLEMS])
    if any(_lines_using(tree, "display", bound) for _, tree in trees):
        helpers.add("display")
    script = _assemble(notebook, program, converted, helpers, futures.lines, tuple(left_out))
    try:  # each cell compiled above; this is the script as the job's Python will compile it, whole
        compile(script.text, program, "exec", dont_inherit=True)
    except SyntaxError as exc:
        found = script.locate(exc.lineno or 0)
        raise NotebookError(notebook, [NotebookProblem(found[0] if found else None, found[1] if found else None,
                                                       f"syntax error in the script made from it: {exc.msg}")]
                            ) from None
    except (ValueError, RecursionError, MemoryError):
        pass  # a NUL byte was refused at its cell; depth is the preflight scan's to say
    return script


_SMTRAIN_COMMAND = re.compile(r"^\s*!!?\s*smtrain\b")  # `!smtrain ...`, `!!smtrain ...`
_SHELL_CELL = re.compile(r"^\s*%%(?:bash|sh)\b")
_SHELL_SMTRAIN = re.compile(r"(?:^|[;&|(]\s*)smtrain\b")  # smtrain as a command word of a shell cell's line
LEFT_OUT = "# smtrain: left out of the job: "


def _smtrain_import(node: ast.AST) -> bool | None:
    """True for `import smtrain` / `from smtrain[.x] import ...` (smtrain_tf, the helper a job's code may import,
    is another package); None for an import of smtrain beside other modules; False otherwise."""
    if isinstance(node, ast.Import):
        ours = [a.name == "smtrain" or a.name.startswith("smtrain.") for a in node.names]
        return True if all(ours) else None if any(ours) else False
    return isinstance(node, ast.ImportFrom) and not node.level and bool(node.module) and (
        node.module == "smtrain" or str(node.module).startswith("smtrain."))


def _read_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _module_bindings(node: ast.AST) -> set[str]:
    """The names a top-level statement binds in the notebook's own scope: not a function's locals or arguments,
    a class body's or a comprehension's (those bind in scopes of their own)."""
    names: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return names
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        names.add(node.id)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
    elif isinstance(node, ast.ExceptHandler) and node.name:
        names.add(node.name)
    for child in ast.iter_child_nodes(node):
        names |= _module_bindings(child)
    return names


def _leave_out_launching(converted: list[tuple[_Cell, list[str]]], trees: dict[int, ast.Module],
                         problems: list[NotebookProblem]) -> list[tuple[int, int, int, str]]:
    """A notebook is often its own launcher (`job = smtrain.submit("job.yaml")` in its last cell); the job runs
    the training, and must not launch itself (smtrain is not in the image). Each top-level statement that imports
    smtrain anywhere in it, runs `!smtrain`, or reads a name only such statements made (`job.metrics()`), and a
    %%bash/%%sh cell that runs smtrain, becomes comments, line for line: (cell, first line, last line, why) for
    each. A line that holds such a statement and another is refused."""
    found: list[tuple[int, int, int, str]] = []
    theirs: set[str] = set()  # names the left-out statements bind that no kept statement bound since
    for one, lines in converted:
        tree = trees.get(one.number)
        if tree is None:
            first = next((i for i, line in enumerate(one.lines) if line.strip()), None)
            if (one.dropped_as is None and first is not None and _SHELL_CELL.match(one.lines[first])
                    and any(_SHELL_SMTRAIN.search(line) for line in one.lines[first + 1:])):
                _comment_out(lines, 1, len(lines))
                found.append((one.number, 1, len(lines), "it runs smtrain"))
            continue
        kept_lines: set[int] = set()
        out: list[tuple[int, int, str]] = []
        for node in tree.body:
            first, last = node.lineno, node.end_lineno or node.lineno
            imported = _smtrain_import(node)
            if imported is None:
                problems.append(NotebookProblem(one.number, first, "import smtrain on a line of its own: the job "
                                                "leaves out what drives smtrain and keeps the rest"))
                continue
            why = None
            if imported or any(_smtrain_import(n) is not False for n in ast.walk(node)):
                why = "it imports smtrain"
            elif any(_SMTRAIN_COMMAND.match(one.lines[n - 1]) for n in range(first, last + 1) if n <= len(one.lines)):
                why = "it runs smtrain"
            elif _read_names(node) & theirs:
                why = f"it uses {sorted(_read_names(node) & theirs)[0]}, made by what drives smtrain"
            bound = _module_bindings(node)
            if why is None:
                theirs -= bound
                kept_lines.update(range(first, last + 1))
                continue
            theirs |= bound
            out.append((first, last, why))
        for first, last, why in out:
            if kept_lines & set(range(first, last + 1)):
                problems.append(NotebookProblem(one.number, first, f"this line both drives smtrain ({why}) and "
                                                "trains: put the smtrain call on a line of its own"))
                continue
            _comment_out(lines, first, last)
            found.append((one.number, first, last, why))
    return found


def _comment_out(lines: list[str], first: int, last: int) -> None:
    for n in range(first, last + 1):
        lines[n - 1] = f"{LEFT_OUT}{lines[n - 1]}" if n == first else f"# {lines[n - 1]}"


def _assemble(notebook: str, program: str, converted: list[tuple[_Cell, list[str]]], helpers: set[str],
              futures: list[str], left_out: tuple[tuple[int, int, str], ...] = ()) -> NotebookScript:
    out = [f"{HEADER}{notebook}: its code cells in order, each after a line",
           f"# `{MARKER.format(notebook=notebook, cell='N')}` (N counts every cell from 1); magics and ! lines are "
           "rewritten line for line.",
           "# Edit the notebook, not this file: smtrain makes it again for every job."]
    out += futures  # before the helpers: Python takes them only before any code
    for name, helper in (("shell", _SHELL_HELPER), ("writefile", _WRITEFILE_HELPER), ("display", _DISPLAY_HELPER)):
        if name in helpers:
            out += ["", *helper.rstrip("\n").split("\n")]
    starts = []
    for one, lines in converted:
        out.append("")
        marker = MARKER.format(notebook=notebook, cell=one.number)
        if one.dropped_as is not None:
            out.append(f"{marker}: a {one.dropped_as} cell, left out (it only displays)")
            continue
        out.append(marker)
        starts.append((len(out), one.number))
        out += lines
    return NotebookScript(notebook, program, "\n".join(out) + "\n", tuple(starts), left_out)


# --- files ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Made:
    script: NotebookScript | None
    error: NotebookError | None


def notebook_script(path: Path, entry_point: str | None = None) -> NotebookScript:
    """The script of the notebook file at `path` (named `entry_point` in its code directory, default its file
    name); NotebookError when it cannot be one. Made once while the file is unchanged."""
    name = entry_point or path.name
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError as exc:
        raise NotebookError(notebook_path(name), [NotebookProblem(None, None, f"cannot be read: "
                                                                              f"{exc.strerror or exc}")]) from None
    made = _made(real, st.st_size, st.st_mtime_ns, st.st_mode, name)
    if made.error is not None:
        raise made.error
    assert made.script is not None
    return made.script


@lru_cache(maxsize=16)
def _made(path: str, size: int, mtime_ns: int, mode: int, entry_point: str) -> _Made:
    def refused(message: str) -> _Made:
        return _Made(None, NotebookError(notebook_path(entry_point), [NotebookProblem(None, None, message)]))

    if not stat.S_ISREG(mode):
        return refused("not a regular file")
    if size > MAX_NOTEBOOK_BYTES:
        return refused(f"{size / 10**6:.0f} MB, over the {MAX_NOTEBOOK_BYTES // 10**6} MB smtrain reads of a "
                       "notebook (its outputs hold data?): clear its outputs in Jupyter and save it")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as exc:
        return refused(f"cannot be read: {exc.strerror or exc}")
    try:
        return _Made(make_script(data, entry_point), None)
    except NotebookError as exc:
        return _Made(None, exc)


def read_code(path: Path, entry_point: str | None = None) -> PythonFile:
    """A user's code file as python_file reads it; a notebook as the script made from it (a notebook that
    cannot be one: skipped, with its first problem as the reason; the spec's check reports them all)."""
    if not is_notebook(path.name):
        return read_python(path)
    try:
        script = notebook_script(path, entry_point)
    except NotebookError as exc:
        return PythonFile(skipped=exc.messages()[0])
    return parse_python(script.data, script.program)


def _json_kind(value: object) -> str:
    """What JSON calls the kind of a value json.loads made."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string"}.get(type(value), "number")
