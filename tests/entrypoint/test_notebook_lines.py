"""The wrap names a notebook's cell and line (smtrain_tf/wrap/notebook_lines.py): in the traceback of the user's
exception, the failure reason and its file:line messages, read from the made script's own marker comments."""

from __future__ import annotations

import traceback
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from smtrain.spec.notebook import make_script

from .conftest import ENTRYPOINTS  # noqa: F401 - puts smtrain_tf on sys.path

from smtrain_tf.wrap import notebook_lines, script  # noqa: E402  isort: skip


def made(tmp_path: Path) -> Path:
    nb = new_notebook(cells=[new_code_cell("%matplotlib inline\ndef check(x):\n    raise ValueError(f'bad {x}')"),
                             new_markdown_cell("Now train"),
                             new_code_cell("print('cell 3')\ncheck(3)")])
    path = tmp_path / "train_ipynb.py"
    path.write_text(make_script(nbformat.writes(nb).encode(), "train.ipynb").text)
    return path


def test_a_traceback_from_the_notebook_names_its_cells(tmp_path: Path) -> None:
    path = made(tmp_path)
    with pytest.raises(ValueError) as caught:
        script.run(str(path), [], str(tmp_path))
    shown = "".join(script.user_traceback(caught.value, str(path)))
    assert 'File "train.ipynb", cell 3, line 2, in <module>' in shown
    assert 'File "train.ipynb", cell 1, line 3, in check' in shown
    assert str(path) not in shown and shown.rstrip().endswith("ValueError: bad 3")
    assert notebook_lines.innermost(caught.value.__traceback__, str(path)) == "train.ipynb, cell 1, line 3"


def test_a_plain_script_is_left_as_it_is(tmp_path: Path) -> None:
    plain = tmp_path / "train.py"
    plain.write_text("# %% train.ipynb cell 1\nraise KeyError('k')\n")
    with pytest.raises(KeyError) as caught:
        script.run(str(plain), [], str(tmp_path))
    lines = traceback.format_exception(type(caught.value), caught.value, caught.value.__traceback__)
    assert notebook_lines.traceback_lines(lines, str(plain)) == lines
    assert notebook_lines.where(str(plain), 2) is None
    assert notebook_lines.where(str(made(tmp_path)), 1) is None  # the made script's header is no cell's
