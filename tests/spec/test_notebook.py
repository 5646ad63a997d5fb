"""A notebook as code.entry_point: the script made from it (smtrain.spec.notebook), each magic and shell line,
every refusal at its cell and line, and the spec's problem at code.entry_point (validate, plan, submit --dry-run,
submit --local all refuse alike, exit 2)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from smtrain.spec.model import load_spec
from smtrain.spec.notebook import NotebookError, make_script, notebook_script, program_name, read_code
from smtrain.spec.problems import SpecError
from tests.support.cli_runner import smtrain
from tests.support.specfiles import BASE, merged


def notebook(*cells: object, **metadata: object) -> bytes:
    return nbformat.writes(new_notebook(cells=list(cells), metadata=metadata)).encode()


def script_of(*sources: str) -> str:
    return make_script(notebook(*(new_code_cell(s) for s in sources)), "train.ipynb").text


def body(text: str) -> list[str]:
    """The script's lines after its header (the cells' lines and their markers)."""
    lines = text.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith("# %% ")):]


def problems_of(*cells: object, name: str = "train.ipynb") -> list[str]:
    with pytest.raises(NotebookError) as caught:
        make_script(notebook(*cells), name)
    return caught.value.messages()


# --- the script ------------------------------------------------------------------------------------------------


def test_code_cells_in_order_each_after_its_marker_counting_every_cell() -> None:
    made = make_script(notebook(new_markdown_cell("# Digits"), new_code_cell("import os\nx = 1"),
                                new_raw_cell("raw text"), new_code_cell("y = x + 1")), "train.ipynb")
    assert made.program == "train_ipynb.py"
    assert made.text.startswith("# Made by smtrain from the notebook train.ipynb")
    assert body(made.text) == ["# %% train.ipynb cell 2", "import os", "x = 1", "",
                               "# %% train.ipynb cell 4", "y = x + 1"]
    assert "Digits" not in made.text and "raw text" not in made.text
    lines = made.text.splitlines()
    assert made.locate(lines.index("y = x + 1") + 1) == (4, 1)
    assert made.where(lines.index("x = 1") + 1) == "train.ipynb, cell 2, line 2"
    assert made.locate(1) is None  # the header is no cell's
    ast.parse(made.text)


def test_outputs_execution_counts_and_metadata_never_reach_the_script() -> None:
    cell = new_code_cell("print(1)")
    before = make_script(notebook(cell), "train.ipynb").text
    ran = new_code_cell("print(1)", execution_count=7, metadata={"scrolled": True},
                        outputs=[new_output("stream", name="stdout", text="1\n")])
    after = make_script(notebook(ran, kernelspec={"name": "python3", "language": "python",
                                                  "display_name": "Python 3"}), "train.ipynb").text
    assert before == after


def test_display_magics_are_dropped_line_for_line() -> None:
    text = script_of("%matplotlib inline\n%config InlineBackend.figure_format = 'retina'\n%load_ext autoreload\n"
                     "%reload_ext autoreload\n%autoreload 2\n%tensorboard --logdir logs\n%who\n%whos\nmodel?\n"
                     "?model\nx = 1")
    assert body(text)[1:] == ["# %matplotlib inline", "# %config InlineBackend.figure_format = 'retina'",
                              "# %load_ext autoreload", "# %reload_ext autoreload", "# %autoreload 2",
                              "# %tensorboard --logdir logs", "# %who", "# %whos", "# model?", "# ?model", "x = 1"]


def test_display_cells_are_left_out_whole() -> None:
    for magic in ("html", "javascript", "markdown", "latex", "svg"):
        text = script_of(f"%%{magic}\n<b>x</b>", "y = 1")
        assert "<b>x</b>" not in text
        assert body(text)[0] == f"# %% train.ipynb cell 1: a %%{magic} cell, left out (it only displays)"
        assert body(text)[-1] == "y = 1"


def test_timing_magics_run_their_statement_once() -> None:
    text = script_of("%time y = f(1)\n%timeit -n 10 -r3 z = f(2)\nfor i in range(2):\n    %time g(i)")
    assert body(text)[1:] == ["y = f(1)", "z = f(2)", "for i in range(2):", "    g(i)"]
    assert body(script_of("%%time\na = 1\nb = 2"))[1:] == ["# %%time", "a = 1", "b = 2"]
    assert body(script_of("%%timeit -n1 setup = 0\na = setup"))[1:] == ["setup = 0", "a = setup"]
    assert body(script_of("%%capture --no-stderr\na = 1"))[1:] == ["# %%capture --no-stderr", "a = 1"]


def test_env_and_cd_become_python(tmp_path: Path) -> None:
    text = script_of(f"%env TF_CPP_MIN_LOG_LEVEL=2\n%env MODE fast run\n%env\n%cd {tmp_path}\n"
                     "import os\nprint(os.environ['TF_CPP_MIN_LOG_LEVEL'], os.environ['MODE'], os.getcwd())")
    run = subprocess.run([sys.executable, "-c", text], capture_output=True, text=True, check=True)
    assert run.stdout == f"2 fast run {tmp_path}\n"


def test_shell_lines_run_through_the_shell_unchecked_and_in_order(tmp_path: Path) -> None:
    text = script_of("print('before', flush=True)\n!echo hi $HOME && exit 3\nfor i in range(2):\n"
                     "    !echo loop\nprint('after')", "%%bash\necho from bash\nexit 0")
    assert "    _smtrain_shell('echo loop')" in text
    run = subprocess.run([sys.executable, "-c", text], capture_output=True, text=True, check=True,
                         env={"HOME": "/home/u", "PATH": "/usr/bin:/bin"})
    assert run.stdout == "before\nhi /home/u\nloop\nloop\nafter\nfrom bash\n"


def test_ipythons_escapes_for_a_literal_dollar_and_brace_are_undone_as_ipython_does() -> None:
    """The refusal of `$name` says to write `$$name` for the shell's own: the job's shell must get `$name`."""
    text = script_of("name = 'python'\n!echo $$name {{a}} '$$kept'\n!echo $$name $HOME\n%env MODE=$$name")
    run = subprocess.run([sys.executable, "-c", text + "print(__import__('os').environ['MODE'])"],
                         capture_output=True, text=True, check=True,
                         env={"name": "shell", "HOME": "/home/u", "PATH": "/usr/bin:/bin"})
    # IPython leaves a line whole when it has a `$x` it cannot fill (`$HOME`): `$$` is then the shell's PID.
    first, second, env = run.stdout.splitlines()
    assert first == "shell {a} $$kept" and env == "$name"
    assert second.endswith("name /home/u") and second != "shell /home/u"


def test_writefile_writes_the_cell(tmp_path: Path) -> None:
    target = tmp_path / "conf.txt"
    text = script_of(f"%%writefile {target}\na = 1\nb = 2")
    subprocess.run([sys.executable, "-c", text], check=True)
    assert target.read_text() == "a = 1\nb = 2\n"


def test_a_magic_inside_a_string_or_continued_line_is_left_alone() -> None:
    source = "s = '''\n%notamagic\n!not a shell line\n'''\nt = (1 +\n    2)\nu = (3\n%2)"
    assert body(script_of(source))[1:] == source.splitlines()


def test_display_gets_a_stand_in_that_prints_unless_the_notebook_has_its_own() -> None:
    text = script_of("display({'a': 1})")
    run = subprocess.run([sys.executable, "-c", text], capture_output=True, text=True, check=True)
    assert run.stdout == "{'a': 1}\n"
    stand_in = "def display(*objs, **kwargs):"
    assert stand_in in text
    assert stand_in not in script_of("def display(x):\n    pass\ndisplay(1)")
    assert stand_in not in script_of("from IPython.display import display\ndisplay(1)")
    assert stand_in not in script_of("print(1)")


# --- refusals, each at its cell and line ------------------------------------------------------------------------


def test_pip_and_conda_lines_are_refused_with_the_packages_to_put_in_requirements() -> None:
    messages = problems_of(new_markdown_cell("intro"),
                           new_code_cell("import os\n!pip install -q tensorflow-datasets 'pandas>=2'\n"
                                         "%pip install -r extra.txt scikit-learn\n!conda install -y -c conda-forge "
                                         "lightgbm\npip install rich"))
    assert messages[0].startswith("train.ipynb, cell 2, line 2: !pip install -q tensorflow-datasets 'pandas>=2': ")
    assert "put tensorflow-datasets, 'pandas>=2' in it" in messages[0] and "code.requirements" in messages[0]
    assert messages[1].startswith("train.ipynb, cell 2, line 3: ") and "put scikit-learn in it" in messages[1]
    assert messages[2].startswith("train.ipynb, cell 2, line 4: ") and "put lightgbm in it" in messages[2]
    assert messages[3].startswith("train.ipynb, cell 2, line 5: ") and "put rich in it" in messages[3]


def test_an_unknown_magic_is_an_error_at_its_cell_and_line() -> None:
    assert problems_of(new_code_cell("x = 1"), new_code_cell("y = 2\n%foo bar")) == [
        "train.ipynb, cell 2, line 2: unknown magic %foo: smtrain turns only these magics into Python: %time, "
        "%timeit, %env, %cd (and leaves out display ones such as %matplotlib); remove it, or write the Python it "
        "stands for"]
    [cell] = problems_of(new_code_cell("%%perl\nprint 1"))
    assert cell.startswith("train.ipynb, cell 1, line 1: unknown magic %%perl")


def test_a_syntax_error_is_named_by_cell_and_line_in_it() -> None:
    [message] = problems_of(new_code_cell("a = 1"), new_markdown_cell("m"),
                            new_code_cell("b = 2\nif b:\nprint(b)"), name="nb/train.ipynb")
    assert message.startswith("nb/train.ipynb, cell 3, line 3: syntax error: expected an indented block")


def test_captured_output_expansion_and_get_ipython_are_refused() -> None:
    messages = problems_of(new_code_cell("files = !ls\nn = %who_ls\nname = 'x'\n!echo {name} $name\n"
                                         "!awk '{print $1}' f $HOME\nget_ipython().system('ls')"))
    assert [m.split(": ")[0] for m in messages] == ["train.ipynb, cell 1, line 1", "train.ipynb, cell 1, line 2",
                                                    "train.ipynb, cell 1, line 4", "train.ipynb, cell 1, line 6"]
    assert "{name} in this shell line" in messages[2]
    assert "get_ipython() exists only inside Jupyter" in messages[3]


def test_a_leading_future_import_moves_to_the_top_of_the_script_and_applies_to_every_cell() -> None:
    made = make_script(notebook(new_markdown_cell("# Train"), new_code_cell("%matplotlib inline"),
                                new_code_cell('"""Train."""\nfrom __future__ import (\n    annotations,\n)\n'
                                              "import os\n!echo hi"),
                                new_code_cell("def f(x: Undefined) -> int:\n    return 1\nprint(f.__annotations__)\n"
                                              "display(2)")), "train.ipynb")
    lines = made.text.splitlines()
    top = lines.index("from __future__ import (")
    assert lines[top:top + 3] == ["from __future__ import (", "    annotations,", ")"]
    assert top < lines.index("def _smtrain_shell(command, executable=None):  # a notebook's `!` line: the shell, "
                             "unchecked, as IPython runs it") < lines.index("# %% train.ipynb cell 2")
    assert all(line.startswith("#") for line in lines[:top])  # only comments before it, as Python requires
    # One script line per cell line still: the moved lines are comments in their cell.
    assert body(made.text)[4:10] == ['"""Train."""', "# from __future__ import (", "#     annotations,", "# )",
                                   "import os", "_smtrain_shell('echo hi')"]
    assert made.locate(lines.index("import os") + 1) == (3, 5)
    assert made.locate(lines.index("print(f.__annotations__)") + 1) == (4, 3)
    run = subprocess.run([sys.executable, "-c", made.text], capture_output=True, text=True, check=True)
    assert run.stdout == "hi\n{'x': 'Undefined', 'return': 'int'}\n2\n"  # annotations unevaluated in cell 4 too


def test_a_future_import_after_other_code_is_refused_where_it_is() -> None:
    future = "from __future__ import annotations"
    messages = problems_of(new_code_cell("import os"), new_code_cell(f"{future}\nx = 1"),
                           new_code_cell(f"y = 2\n{future}"), new_code_cell(f"def f():\n    {future}"))
    assert [m.split(": ")[0] for m in messages] == ["train.ipynb, cell 2, line 1", "train.ipynb, cell 3, line 2",
                                                    "train.ipynb, cell 4, line 2"]
    assert all("from __future__ import annotations after other code" in m for m in messages)
    assert "put it at the top of the notebook's first code cell (cell 1), before any other code" in messages[0]
    [shared] = problems_of(new_code_cell(f"{future}; import os"))
    assert shared.startswith("train.ipynb, cell 1, line 1: from __future__ import annotations: put it on a line "
                             "of its own")
    [unknown] = problems_of(new_code_cell("from __future__ import braces"))
    assert unknown.startswith("train.ipynb, cell 1, line 1: syntax error: not a chance")


def test_top_level_await_return_and_yield_are_refused_at_their_cell_and_line() -> None:
    messages = problems_of(new_code_cell("import asyncio"), new_code_cell("x = 1\nawait asyncio.sleep(0)"),
                           new_code_cell("if True:\n    return 1"), new_code_cell("yield 2"),
                           new_code_cell("async with lock:\n    pass"), new_code_cell("def f():\n    await g()"))
    assert [m.split(": ")[0] for m in messages] == [f"train.ipynb, cell {cell}, line {line}" for cell, line in
                                                    ((2, 2), (3, 2), (4, 1), (5, 1), (6, 2))]
    assert "Jupyter runs it in its kernel's event loop, which is not there when a job runs the notebook as a " \
           "script" in messages[0] and "asyncio.run(main())" in messages[0]
    assert "syntax error: 'return' outside function (a job runs the notebook's cells as one script" in messages[1]
    assert "'yield' outside function" in messages[2]
    assert "asyncio.run" in messages[3]
    assert "syntax error: 'await' outside async function" in messages[4]  # wrong in Jupyter too: no event loop hint
    script_of("import asyncio\nasync def main():\n    await asyncio.sleep(0)\nasyncio.run(main())")  # the fix


@pytest.mark.parametrize("data, says", [
    (b"{not json", "train.ipynb: not valid JSON at line 1, column 2"),
    (b"[1, 2]", "train.ipynb: JSON, but not a notebook"),
    (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                 "cells": [{"cell_type": "code", "source": "x"}]}).encode(), "train.ipynb: not a valid notebook"),
    # Broken in their structure, where nbformat's converters raised a bare TypeError before its schema spoke.
    (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": None}).encode(),
     "train.ipynb: not a valid notebook: its cells are a JSON null, not a list"),
    (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [3]}).encode(),
     "train.ipynb: not a valid notebook: cell 1 is a JSON number, not an object"),
])
def test_a_file_that_is_not_a_notebook_is_refused_whole(data: bytes, says: str) -> None:
    with pytest.raises(NotebookError) as caught:
        make_script(data, "train.ipynb")
    assert str(caught.value).startswith(says)


def test_a_notebook_of_another_language_is_refused() -> None:
    data = notebook(new_code_cell("x <- 1"), kernelspec={"name": "ir", "language": "R", "display_name": "R"})
    with pytest.raises(NotebookError, match=r"^train\.ipynb: its kernel runs R, not Python"):
        make_script(data, "train.ipynb")


def test_program_names_never_shadow_a_module_or_an_export() -> None:
    assert program_name("train.ipynb") == "train_ipynb.py"
    assert program_name("./nb/keras.ipynb") == "nb/keras_ipynb.py"


def test_read_code_gives_the_scripts_tree_to_init_and_the_metric_names(tmp_path: Path) -> None:
    path = tmp_path / "train.ipynb"
    path.write_bytes(notebook(new_code_cell("%matplotlib inline\nimport argparse")))
    read = read_code(path)
    assert read.tree is not None and read.syntax_error is None
    path.write_bytes(notebook(new_code_cell("%foo")))
    assert read_code(path).skipped is not None and notebook_script.__name__  # refused: not read, said


# --- the spec -------------------------------------------------------------------------------------------------


def write_job(tmp_path: Path, *sources: str, **code: object) -> Path:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "train.ipynb").write_bytes(notebook(new_markdown_cell("# Train"), *(new_code_cell(s) for s in sources)))
    spec = merged(BASE, {"compute": {"instance_type": "ml.g5.xlarge"}, "inputs": {},
                         "code": {"source_dir": "src", "entry_point": "train.ipynb", **code}})
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_the_spec_refuses_it_at_code_entry_point_with_the_cell_and_line(tmp_path: Path) -> None:
    spec = write_job(tmp_path, "import os", "x = 1\n%foo")
    with pytest.raises(SpecError) as caught:
        load_spec(spec)
    [problem] = caught.value.problems
    assert problem.path == ("code", "entry_point")
    line = spec.read_text().splitlines().index("  entry_point: train.ipynb") + 1
    assert problem.location is not None and problem.location.line == line
    assert problem.message.startswith("train.ipynb, cell 3, line 2: unknown magic %foo")


@pytest.mark.parametrize("source, says", [
    ("x = (1,\ny = 2", "train.ipynb, cell 2, line 1: syntax error"),
    ("%foo", "train.ipynb, cell 2, line 1: unknown magic %foo"),
    ("import os\n!pip install pandas", "train.ipynb, cell 2, line 2: !pip install pandas: a job installs its "
                                       "packages before the notebook runs"),
])
def test_every_command_refuses_it_alike_with_exit_2(tmp_path: Path, source: str, says: str) -> None:
    spec = write_job(tmp_path, source)
    local = tmp_path / "local.yaml"
    local.write_text(spec.read_text().replace("s3://my-bucket/out", "out"))
    for args in (("validate", str(spec)), ("plan", str(spec)), ("submit", str(spec), "--dry-run"),
                 ("submit", str(local), "--local")):
        proc = smtrain(*args, env={"SMTRAIN_HOME": str(tmp_path / "home")}, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert f"code.entry_point: {says}" in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing ran


# --- smtrain init ---------------------------------------------------------------------------------------------


def test_init_reads_a_notebook_and_writes_it_as_the_entry_point(tmp_path: Path) -> None:
    from smtrain.spec.starter import read_script, starter_text

    nb = tmp_path / "digits" / "train.ipynb"
    nb.parent.mkdir()
    nb.write_bytes(notebook(new_code_cell("%matplotlib inline\nimport os\n!nvidia-smi\n"
                                          "data = os.environ['SM_CHANNEL_TRAIN']")))
    facts = read_script(nb)
    assert facts.parse_error is None and facts.channels == ("train",)
    text = starter_text(nb, nb.parent / "job.yaml", facts, tf_version="2.21", region="us-east-1")
    assert yaml.safe_load(text)["code"] == {"source_dir": ".", "entry_point": "train.ipynb", "wrap": True}
    (nb.parent / "job.yaml").write_text(text.replace("s3://my-bucket/data/train", "data"))
    load_spec(nb.parent / "job.yaml")  # valid as written


def test_smtrain_init_takes_a_notebook(tmp_path: Path) -> None:
    (tmp_path / "train.ipynb").write_bytes(notebook(new_code_cell("import os\nprint(os.getcwd())")))
    proc = smtrain("init", "train.ipynb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load((tmp_path / "job.yaml").read_text())["code"]["entry_point"] == "train.ipynb"
    (tmp_path / "notes.txt").write_text("x")
    refused = smtrain("init", "notes.txt", cwd=tmp_path)
    assert refused.returncode == 2 and "not a Python script (.py) or notebook (.ipynb)" in refused.stderr


def test_smtrain_init_refuses_a_notebook_no_spec_can_run_before_writing_anything(tmp_path: Path) -> None:
    nb = tmp_path / "nb" / "train.ipynb"
    nb.parent.mkdir()
    nb.write_bytes(notebook(new_code_cell("import os\n!pip install pandas"), new_markdown_cell("m"),
                            new_code_cell("%foo")))
    proc = smtrain("init", "nb/train.ipynb", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0].startswith("error: nb/train.ipynb, cell 1, line 2: !pip install pandas: a "
                                                  "job installs its packages")
    assert "nb/train.ipynb, cell 3, line 1: unknown magic %foo" in proc.stderr
    assert "2 problems in nb/train.ipynb; nothing written" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in nb.parent.iterdir()) == ["train.ipynb"]
    nb.write_bytes(notebook(new_code_cell("import os")))
    fixed = smtrain("init", "nb/train.ipynb", cwd=tmp_path)  # the rerun needs no --force
    assert fixed.returncode == 0, fixed.stderr


def test_plan_shows_the_program_made_from_the_notebook(tmp_path: Path) -> None:
    proc = smtrain("plan", str(write_job(tmp_path, "import os")), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "program       train_ipynb.py (your script, made from train.ipynb)" in proc.stdout


# --- a notebook that is its own launcher ---------------------------------------------------------------------------


def test_what_drives_smtrain_is_left_out_of_the_job_line_for_line() -> None:
    # The habit: train in the first cells, launch and follow the job in the last ones. The job runs the training;
    # smtrain is not in its image, and a job must not launch itself.
    made = make_script(notebook(
        new_code_cell("import numpy as np"),
        new_code_cell("import smtrain\njob = smtrain.submit('job.yaml', local=True)\nprint(job.status())\nn = 2"),
        new_code_cell("rows = job.metrics()\nprint(np.zeros(n))"),
        new_code_cell("!smtrain status my-job\nimport smtrain_tf")), "train.ipynb")
    assert [(cell, line) for cell, line, _ in made.left_out] == [(2, 1), (2, 2), (2, 3), (3, 1), (4, 1)]
    assert dict(((c, n), why) for c, n, why in made.left_out)[(3, 1)] == \
        "it uses job, made by what drives smtrain"
    lines = made.text.splitlines()
    assert lines[made.text.splitlines().index("# %% train.ipynb cell 2") + 4] == "n = 2"  # line for line
    assert "import smtrain_tf" in lines  # the helper a job's code may import is another package
    # The script runs where smtrain cannot be imported (as in the job's image): nothing of it is left.
    run = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.modules['smtrain'] = None; "
                          "sys.modules['smtrain_tf'] = type(sys)('smtrain_tf'); exec(compile(sys.stdin.read(), "
                          "'train_ipynb.py', 'exec'))"], input=made.text, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "[0. 0.]", run.stderr


def test_an_import_of_smtrain_beside_other_modules_is_refused_at_its_line() -> None:
    assert problems_of(new_code_cell("x = 1\nimport tensorflow as tf, smtrain")) == [
        "train.ipynb, cell 1, line 2: import smtrain on a line of its own: the job leaves out what drives smtrain "
        "and keeps the rest"]
    assert problems_of(new_code_cell("import smtrain\nn = 1; job = smtrain.plan('job.yaml')"))[0].startswith(
        "train.ipynb, cell 1, line 2: this line both drives smtrain (it uses smtrain, made by what drives smtrain) "
        "and trains")


def test_validate_names_each_cell_left_out_as_a_warning(tmp_path: Path) -> None:
    spec = write_job(tmp_path, "import os", "import smtrain\njob = smtrain.submit('job.yaml')")
    proc = smtrain("validate", str(spec), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ("code.source_dir: train.ipynb, cell 3: left out of the job (what drives smtrain runs here, not in the "
            "job; a notebook of its own for it silences this): line 1: it imports smtrain; line 2: it uses smtrain, "
            "made by what drives smtrain") in proc.stderr


def test_only_the_notebook_s_own_names_carry_over_from_what_is_left_out() -> None:
    # A function's locals and a comprehension's variable are not the notebook's names: the training that reads
    # the same names stays in the job.
    made = make_script(notebook(
        new_code_cell("model = 'the model'\nlr = 0.01"),
        new_code_cell("import smtrain\ndef fetch():\n    model = smtrain.Job.attach('x').model_uri\n    return model"),
        new_code_cell("jobs = [smtrain.submit('job.yaml', {'hyperparameters.lr': lr}) for lr in (0.1, 0.2)]"),
        new_code_cell("print(model, lr)")), "train.ipynb")
    assert [cell for cell, _, _ in made.left_out] == [2, 2, 3]
    assert body(made.text)[-1] == "print(model, lr)"


@pytest.mark.parametrize("cell", [
    "try:\n    import smtrain\nexcept ImportError:\n    smtrain = None\njob = smtrain.submit('job.yaml')",
    "import os\nif os.environ.get('LAUNCH'):\n    import smtrain\n    smtrain.submit('job.yaml')",
    "def launch():\n    import smtrain\n    return smtrain.submit('job.yaml')\njob = launch()",
    "epochs = 3\n!smtrain submit job.yaml --set training.epochs={epochs}",
    "!!smtrain list --local",
])
def test_launchers_written_other_ways_are_left_out_too(cell: str) -> None:
    made = make_script(notebook(new_code_cell("import numpy as np"), new_code_cell(cell)), "train.ipynb")
    kept = [line for line in body(made.text) if line and not line.startswith("#")]
    assert kept[0] == "import numpy as np" and kept[1:] in ([], ["epochs = 3"], ["import os"]), made.text
    assert made.left_out


def test_a_shell_cell_that_runs_smtrain_is_left_out_whole() -> None:
    made = make_script(notebook(new_code_cell("x = 1"), new_code_cell("%%bash\necho start\nsmtrain submit job.yaml")),
                       "train.ipynb")
    assert [(cell, why) for cell, _, why in made.left_out] == [(2, "it runs smtrain")]
    assert "_smtrain_shell" not in "\n".join(line for line in body(made.text) if not line.startswith("#"))
