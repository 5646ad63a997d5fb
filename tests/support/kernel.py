"""Notebooks run in a real Jupyter kernel (nbclient + ipykernel, the test extra), cell by cell, as Jupyter
runs them: the kernel is this venv's Python (ipykernel's own kernel spec), started with the environment given."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

CELL_TIMEOUT = 900  # seconds: a cell that trains two hosts on the digits demo, on 2 busy cores


def notebook(*sources: str) -> Any:
    """A notebook of code cells, as nbformat writes it."""
    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


@contextmanager
def kernel(nb: Any, cwd: Path, env: Mapping[str, str] | None = None) -> Iterator[Callable[[int], Any]]:
    """A kernel for `nb` in `cwd`; yields run(i), which executes cell i and returns it with its outputs.
    Errors in a cell raise nbclient's CellExecutionError with the kernel's traceback."""
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    full_env = {**os.environ, **(env or {})}
    # The kernel must be this venv's Python (where smtrain is installed), whatever `python3` is on PATH.
    full_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full_env.get('PATH', '')}"
    with client.setup_kernel(env=full_env):
        def run(i: int) -> Any:
            return client.execute_cell(nb.cells[i], i)

        yield run


def printed(cell: Any) -> str:
    """What a cell printed (its streams)."""
    return "".join(o.text for o in cell.outputs if o.output_type == "stream")


def texts(cell: Any) -> str:
    """Everything a cell showed as text: streams, and the text/plain of its results and displays."""
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif o.output_type in ("execute_result", "display_data", "update_display_data"):
            out.append(o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)


def html(cell: Any) -> str:
    """The text/html of a cell's results and displays (the last state of each display)."""
    return "\n".join(o.get("data", {}).get("text/html", "") for o in cell.outputs
                     if o.output_type in ("execute_result", "display_data"))


def save(nb: Any, path: Path) -> Path:
    nbformat.write(nb, str(path))
    return path
