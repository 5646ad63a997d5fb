"""The installed parts of the bundled entrypoint, as every job's bundle ships them: both programs
(smtrain_entry.py, smtrain_wrap.py) and their package, at the archive's root, whatever the job runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from smtrain.bundle.entrypoint import entrypoint_parts
from smtrain.bundle.model import BundleError
from smtrain.bundle.request import check_bundle
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from tests.support import ROOT
from tests.support.specfiles import write_spec


def test_the_parts_are_the_checkouts_entrypoints() -> None:
    entry, wrap, package = entrypoint_parts()
    assert (entry.name, wrap.name, package.name) == ("smtrain_entry.py", "smtrain_wrap.py", "smtrain_tf")
    assert entry.parent == wrap.parent == package.parent == (ROOT / "entrypoints").resolve()


@pytest.mark.parametrize("code", [{}, {"source_dir": "src", "entry_point": "train.py"},
                                  {"source_dir": "src", "entry_point": "train.py", "wrap": True}],
                         ids=["bundled", "own", "wrapped"])
def test_every_bundle_holds_both_programs_and_their_package(tmp_path: Path, code: dict) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    plan = build_plan(load_spec(write_spec(tmp_path, {"code": code}), env={}), load_catalog())
    paths = {f.path for f in check_bundle(plan).files}
    assert {"smtrain_entry.py", "smtrain_wrap.py", "smtrain_tf/__init__.py", "smtrain_tf/wrap/__init__.py"} <= paths
    assert ("train.py" in paths) == bool(code)


def test_a_users_file_named_like_the_wrap_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("")
    (tmp_path / "src" / "smtrain_wrap.py").write_text("")
    plan = build_plan(load_spec(write_spec(tmp_path, {"code": {"source_dir": "src", "entry_point": "train.py"}}),
                                env={}), load_catalog())
    with pytest.raises(BundleError, match="smtrain_wrap.py has the same path as a bundled entry point file"):
        check_bundle(plan)
