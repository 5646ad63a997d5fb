"""A notebook entry point in the bundle: the script made from it ships (never the .ipynb), under the program name
the job runs (sagemaker_program, the wrap's SMTRAIN_WRAP_SCRIPT); the same notebook gives the same sha256 however
often it ran."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from smtrain.bundle.model import BundleError
from smtrain.bundle.request import check_bundle, make_bundle
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.render.training_request import render_training_request
from smtrain.spec.model import load_spec
from smtrain.spec.notebook import notebook_script
from tests.bundle.fake_secrets import FAKE_KEY_ID, FAKE_SECRET_KEY
from tests.support.specfiles import BASE, merged

CELLS = ["import os\n%matplotlib inline", "x = 1\n!echo hi", "print(x)"]


def write_notebook(path: Path, outputs: bool = False) -> None:
    cells = [new_markdown_cell("# Train")]
    for i, source in enumerate(CELLS, start=1):
        cell = new_code_cell(source)
        if outputs:  # what running it leaves: counts, outputs (a key printed by mistake), metadata
            cell = new_code_cell(source, execution_count=i * 3, metadata={"collapsed": False},
                                 outputs=[new_output("stream", name="stdout",
                                                     text=f"{FAKE_KEY_ID} {FAKE_SECRET_KEY} run {i}\n")])
        cells.append(cell)
    nb = new_notebook(cells=cells)
    if outputs:
        nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nbformat.write(nb, path)


def plan_for(tmp_path: Path, **code: object):  # noqa: ANN201 - a Plan
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    if not (src / "train.ipynb").exists():
        write_notebook(src / "train.ipynb")
    spec = merged(BASE, {"compute": {"instance_type": "ml.g5.xlarge"},
                         "code": {"source_dir": "src", "entry_point": "train.ipynb", **code}})
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return build_plan(load_spec(path), load_catalog())


def archive(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_the_script_ships_under_its_program_name_and_the_notebook_does_not(tmp_path: Path) -> None:
    plan = plan_for(tmp_path)
    assert plan.entry_point == "train_ipynb.py" and plan.script == "train.ipynb"
    files = archive(make_bundle(plan).data)
    assert "train.ipynb" not in files
    assert files["train_ipynb.py"] == notebook_script(tmp_path / "src" / "train.ipynb", "train.ipynb").data
    request = render_training_request(plan, "nb-1", "s3://my-bucket/out/source/x/sourcedir.tar.gz")
    assert json.loads(request["HyperParameters"]["sagemaker_program"]) == "train_ipynb.py"


def test_a_wrapped_notebook_is_the_wraps_script(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, wrap=True)
    assert plan.entry_point == "smtrain_wrap.py"
    assert plan.environment["SMTRAIN_WRAP_SCRIPT"] == "train_ipynb.py"
    assert plan.wrap is not None and plan.wrap.script == "train.ipynb"


def test_same_notebook_same_sha256_however_often_it_ran(tmp_path: Path) -> None:
    plan = plan_for(tmp_path)
    before = make_bundle(plan).sha256
    write_notebook(tmp_path / "src" / "train.ipynb", outputs=True)  # ran: outputs hold a key; never shipped
    after = make_bundle(plan)
    assert after.sha256 == before
    assert FAKE_KEY_ID.encode() not in b"".join(archive(after.data).values())
    nbformat.write(new_notebook(cells=[new_code_cell(CELLS[0] + "\ny = 2")]), tmp_path / "src" / "train.ipynb")
    assert make_bundle(plan).sha256 != before  # the code changed: another bundle


def test_a_secret_in_the_notebooks_code_is_refused_as_in_a_script(tmp_path: Path) -> None:
    plan = plan_for(tmp_path)
    nbformat.write(new_notebook(cells=[new_code_cell(f"key = '{FAKE_KEY_ID}'\nsecret = '{FAKE_SECRET_KEY}'")]),
                   tmp_path / "src" / "train.ipynb")
    with pytest.raises(BundleError, match=r"train_ipynb\.py \(holds an AWS"):
        check_bundle(plan)


def test_a_file_with_the_scripts_name_is_refused_at_entry_point(tmp_path: Path) -> None:
    plan = plan_for(tmp_path)
    (tmp_path / "src" / "train_ipynb.py").write_text("print('mine')\n")
    with pytest.raises(BundleError, match="code.source_dir has a file train_ipynb.py") as caught:
        check_bundle(plan)
    assert caught.value.field == ("code", "entry_point")


def test_a_notebook_left_out_by_the_ignore_rules_is_named(tmp_path: Path) -> None:
    plan = plan_for(tmp_path)
    (tmp_path / "src" / ".smtrainignore").write_text("*.ipynb\n")
    with pytest.raises(BundleError, match=r"train\.ipynb is left out of the bundle.*!train\.ipynb"):
        check_bundle(plan)


def test_jupyters_checkpoints_never_ship(tmp_path: Path) -> None:
    """.ipynb_checkpoints holds each notebook as last saved, outputs and all, and changes on every save."""
    plan = plan_for(tmp_path)
    before = make_bundle(plan)
    checkpoints = tmp_path / "src" / ".ipynb_checkpoints"
    checkpoints.mkdir()
    saved = new_code_cell(CELLS[0], execution_count=4, outputs=[new_output("stream", name="stdout", text="4\n")])
    nbformat.write(new_notebook(cells=[saved]), checkpoints / "train-checkpoint.ipynb")
    nested = tmp_path / "src" / "lib" / ".ipynb_checkpoints"
    nested.mkdir(parents=True)
    (nested / "util-checkpoint.py").write_text("y = 2\n")
    after = make_bundle(plan)
    assert after.sha256 == before.sha256
    assert not any(".ipynb_checkpoints" in name for name in archive(after.data))
    write_notebook(checkpoints / "train-checkpoint.ipynb", outputs=True)  # its outputs hold a key: never read
    check_bundle(plan)
