"""The preflight scan of a notebook entry point: the script made from it is scanned, and each finding names the
notebook's cell and the line in it (never the made script's line), in text and in JSON."""

from __future__ import annotations

from pathlib import Path

import nbformat
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from smtrain.bundle.request import check_bundle
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.preflight.scan import scan, stand_ins
from smtrain.spec.model import load_spec
from tests.support.cli_runner import smtrain
from tests.support.specfiles import BASE, merged

CELLS = [
    new_markdown_cell("# Digits"),
    new_code_cell("%matplotlib inline\nimport tensorflow as tf\nfrom tensorflow import keras"),
    new_markdown_cell("Train it"),
    new_code_cell("strategy = tf.distribute.MirroredStrategy()\nwith strategy.scope():\n"
                  "    model = keras.Sequential([keras.layers.Dense(2)])\n"
                  "    model.compile(optimizer=keras.optimizers.Adam(lr=0.01), loss='mse')\n"
                  "opt = keras.optimizers.Adam(lr=0.01)"),
]


def job(tmp_path: Path, **code: object) -> Path:
    (tmp_path / "src").mkdir()
    nbformat.write(new_notebook(cells=CELLS), tmp_path / "src" / "train.ipynb")
    spec = merged(BASE, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2},
                         "code": {"source_dir": "src", "entry_point": "train.ipynb", **code}})
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_findings_and_stand_ins_name_the_notebooks_cell_and_line(tmp_path: Path) -> None:
    plan = build_plan(load_spec(job(tmp_path, wrap=True)), load_catalog())
    shipped = [(f.path, Path(f.source)) for f in check_bundle(plan).files if f.path.endswith(".py")
               and f.origin == "source"]
    found = [f for f in scan(plan, shipped) if f.rule == "keras3-lr"]
    assert [(f.file, f.cell, f.line) for f in found] == [("train.ipynb", 4, 4)]
    assert found[0].message.endswith("(also cell 4, line 5)")
    assert found[0].render().startswith("train.ipynb, cell 4, line 4: error: Keras 3")
    assert found[0].to_dict()["cell"] == 4
    [stand_in] = stand_ins(plan, shipped)
    assert stand_in.render().startswith("train.ipynb, cell 4, line 1 builds MirroredStrategy()")


def test_the_command_line_names_the_cell(tmp_path: Path) -> None:
    proc = smtrain("validate", str(job(tmp_path)), cwd=tmp_path)
    assert proc.returncode == 2  # Keras 3 refuses lr=: an error finding, nothing sent
    assert "train.ipynb, cell 4, line 4: error: Keras 3" in proc.stderr, proc.stderr
    assert "train_ipynb.py" not in proc.stderr
