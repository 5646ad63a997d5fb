"""A user's Python file read with ast within bounds: what init, the preflight scan, the hook checks and the
metric names read, each file parsed once.

The code is read to advise (a finding, a starting spec, a metric name), so a file it cannot afford is
skipped with a reason a `note:` line shows, never an internal error or minutes of work:

- over MAX_BYTES: generated code or data, not a training script (a 5 MB file costs 2 GB and half a minute
  to parse and walk); not read past its size;
- deeper than MAX_DEPTH levels (a 10^6-term `1+1+...`, a long call chain): Python's own parser gives up with
  RecursionError past about 3,000 levels, and the walks that recurse (ast.unparse, literal_eval) near 300;
- RecursionError or MemoryError from the parser: the same, "too deeply nested or too large to read".

A syntax error is not skipped: it is the file's problem, and the caller reports it at its line.
"""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# The largest training scripts seen are a few hundred KB; 1 MB of dense code costs 10 s and 450 MB to walk.
MAX_BYTES = 500_000
# Hand-written code nests under 70 levels (measured over the ~2,200 files of a scientific Python
# environment, sympy and TensorFlow among them); only generated tables go past 200. At 200 levels the
# recursive walks keep a wide margin below Python's 1,000 frames.
MAX_DEPTH = 200
_NODES = "_smtrain_nodes"  # a parsed module's nodes in ast.walk's order, kept on the module
_PARENTS = "_smtrain_parents"


def _mb(num_bytes: int) -> str:
    return f"{num_bytes / 10**6:.1f} MB"


@dataclass(frozen=True)
class PythonFile:
    """A file read: its tree, or why not (`skipped`: too large, too deep, unreadable; `syntax_error`)."""

    tree: ast.Module | None = None
    data: bytes = b""
    skipped: str | None = None  # for a `note:` line after the file's name: what was not read, and why
    syntax_error: SyntaxError | None = None


def _index(tree: ast.Module, limit: int = MAX_DEPTH) -> bool:
    """One pass over the tree, without recursion: its nodes in ast.walk's order and each node's parent,
    kept on the module for walk() and parents_of(). False when it nests deeper than `limit`."""
    nodes: list[ast.AST] = [tree]
    depths = [1]
    parents: dict[ast.AST, ast.AST] = {}
    i = 0
    while i < len(nodes):
        node, depth = nodes[i], depths[i]
        if depth > limit:
            return False
        for child in ast.iter_child_nodes(node):
            parents[child] = node
            nodes.append(child)
            depths.append(depth + 1)
        i += 1
    setattr(tree, _NODES, nodes)
    setattr(tree, _PARENTS, parents)
    return True


def parse_python(data: bytes, name: str = "<code>") -> PythonFile:
    """`data` parsed as the file `name`, within the depth bound."""
    try:
        tree = ast.parse(data, filename=name)
    except SyntaxError as exc:
        return PythonFile(data=data, syntax_error=exc)
    except ValueError as exc:  # a NUL byte: not Python source
        return PythonFile(data=data, syntax_error=SyntaxError(str(exc)))
    except (RecursionError, MemoryError):
        return PythonFile(data=data, skipped="too deeply nested or too large for Python's parser: not read")
    if not _index(tree):
        return PythonFile(data=data, skipped=f"nests deeper than {MAX_DEPTH} levels (generated code?): not read")
    return PythonFile(tree, data)


def read_python(path: Path) -> PythonFile:
    """The file at `path`, read only when it is a regular file within MAX_BYTES; OSError when it cannot be
    read. Parsed once while the file is unchanged (init, the plan and the preflight scan all read it)."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return _read(real, st.st_size, st.st_mtime_ns, st.st_mode)


@lru_cache(maxsize=64)
def _read(path: str, size: int, mtime_ns: int, mode: int) -> PythonFile:
    if not stat.S_ISREG(mode):
        return PythonFile(skipped="not a regular file: not read")
    if size > MAX_BYTES:
        return PythonFile(skipped=f"{_mb(size)}, over the {_mb(MAX_BYTES)} read of a script (generated code or "
                                  "data?): not read")
    with open(path, "rb") as handle:
        data = handle.read(MAX_BYTES + 1)  # the file may have grown since the stat
    if len(data) > MAX_BYTES:
        return PythonFile(skipped=f"over the {_mb(MAX_BYTES)} read of a script: not read")
    return parse_python(data, path)


def walk(tree: ast.AST) -> Iterator[ast.AST] | list[ast.AST]:
    """ast.walk(tree); a parsed module's nodes are listed once and reused by every rule."""
    nodes = getattr(tree, _NODES, None) if isinstance(tree, ast.Module) else None
    if nodes is None and isinstance(tree, ast.Module) and _index(tree, limit=10**9):
        nodes = getattr(tree, _NODES)
    return nodes if nodes is not None else ast.walk(tree)


def parents_of(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """node -> the node that holds it (a module's map is made once)."""
    found = getattr(tree, _PARENTS, None) if isinstance(tree, ast.Module) else None
    if found is None and isinstance(tree, ast.Module) and _index(tree, limit=10**9):
        found = getattr(tree, _PARENTS)
    if found is None:
        found = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                found[child] = node
    return found
