"""smtrain's own outputs and records never ship: a marked directory, SMTRAIN_HOME and a local output
inside the source dir are left out of every bundle, however deep they lie (smtrain.bundle.own_places)."""

from __future__ import annotations

from pathlib import Path

import pytest

from smtrain.bundle.build import build_bundle
from smtrain.bundle.own_places import MARKER, mark
from smtrain.bundle.request import check_bundle, make_bundle
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from tests.support.specfiles import write_spec

CODE = {"train.py": "print('train')\n", "lib/util.py": "X = 1\n"}
# What earlier local runs leave: archives, a bundle, a job record, a host's files.
LEFT_BY_A_RUN = {"job-1/output/model.tar.gz": b"model", "source/abc/sourcedir.tar.gz": b"bundle",
                 "local-jobs/job-1/record.json": b"{}", "local-jobs/job-1/hosts/algo-1/model/m.keras": b"w"}


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)


def source_paths(bundle_files: object) -> set[str]:
    return {f.path for f in bundle_files if f.origin == "source"}  # type: ignore[attr-defined]


def test_a_marked_directory_is_left_out_at_any_depth_and_through_a_link(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src, {**CODE, "runs/a/b/keep.txt": "mine\n", "runs/a/b/out/model.bin": "weights",
                "outputs/model.bin": "weights", "notes/out/plan.txt": "mine too\n"})
    mark(src / "runs" / "a" / "b" / "out")  # three levels down
    mark(src / "outputs")
    (src / "linked").symlink_to(src / "outputs", target_is_directory=True)
    # A negation cannot bring a file of smtrain's back.
    (src / ".smtrainignore").write_text("!outputs/model.bin\n")
    bundle = build_bundle(None, src)
    paths = {f.path for f in bundle.files}
    assert paths == {"train.py", "lib/util.py", "runs/a/b/keep.txt", "notes/out/plan.txt"}
    assert not any(MARKER in p for p in paths)
    # Said, not silent: a marker copied into code would otherwise drop it without a word.
    [said] = [w for w in bundle.warnings if MARKER in w]
    assert said.startswith("left out of the code bundle: 3 folders that earlier local runs wrote (")
    assert all(f"{name}/" in said for name in ("runs/a/b/out", "outputs", "linked")) and "\n" not in said


def test_the_warning_stays_one_line_however_many_runs_wrote(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src, CODE)
    for i in range(12):  # twelve local runs' folders under the spec's old output
        (src / "out" / f"job-{i:02d}").mkdir(parents=True)
        mark(src / "out" / f"job-{i:02d}")
    [said] = [w for w in build_bundle(None, src).warnings if MARKER in w]
    assert "12 folders" in said and "and 9 more" in said and "\n" not in said and len(said) < 300


def test_the_spec_s_own_output_inside_the_source_dir_is_left_out_without_a_warning(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src, {**CODE, "out/job/model.bin": "weights"})
    mark(src / "out" / "job")
    bundle = build_bundle(None, src, leave_out=[src / "out"])
    assert {f.path for f in bundle.files} == {"train.py", "lib/util.py"} and bundle.warnings == ()


def test_leave_out_takes_only_directories_below_the_source_dir(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src, {**CODE, "out/x.bin": "x"})
    # The source dir itself, or a directory outside it, named as smtrain's: the code still ships whole.
    kept = {f.path for f in build_bundle(None, src, leave_out=[src, tmp_path, tmp_path / "elsewhere"]).files}
    assert kept == {"train.py", "lib/util.py", "out/x.bin"}
    assert {f.path for f in build_bundle(None, src, leave_out=[src / "out"]).files} == {"train.py", "lib/util.py"}


def plan_for(tmp_path: Path, output: str):  # noqa: ANN201 - a Plan
    write(tmp_path / "src", CODE)
    spec = write_spec(tmp_path, {"code": {"source_dir": "src", "entry_point": "train.py"}, "output": output})
    return build_plan(load_spec(spec, env={}), load_catalog())


@pytest.mark.parametrize(("output", "written_at"), [
    ("src/out", "src/out"),  # what `init` writes for a script in the current folder, output ./out
    ("src/runs/2024/out", "src/runs/2024/out"),  # two levels inside the source dir
    ("file://{tmp}/src/results", "src/results"),  # a file:// URI
])
def test_a_local_output_inside_the_source_dir_is_left_out_even_unmarked(tmp_path: Path, output: str,
                                                                        written_at: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTRAIN_HOME", str(tmp_path / "home"))
    plan = plan_for(tmp_path, output.format(tmp=tmp_path))
    before = make_bundle(plan)
    write(tmp_path / written_at, LEFT_BY_A_RUN)  # no marker: what a run before the marker existed left
    after = make_bundle(plan)
    assert source_paths(after.files) == {"train.py", "lib/util.py"}
    assert after.sha256 == before.sha256


def test_an_smtrain_home_inside_the_source_dir_is_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_for(tmp_path, "s3://bucket/out")  # a SageMaker job: its bundle must not carry local records either
    before = make_bundle(plan)
    home = tmp_path / "src" / ".state" / "smtrain"
    write(home, LEFT_BY_A_RUN)
    monkeypatch.setenv("SMTRAIN_HOME", str(home))
    assert source_paths(check_bundle(plan).files) == {"train.py", "lib/util.py"}
    assert make_bundle(plan).sha256 == before.sha256
    # A relative SMTRAIN_HOME is where the records go from the working directory.
    monkeypatch.chdir(tmp_path / "src")
    monkeypatch.setenv("SMTRAIN_HOME", ".state/smtrain")
    assert make_bundle(plan).sha256 == before.sha256


def test_an_output_that_is_the_source_dir_leaves_the_code_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # output: the source dir itself. The code ships; what runs wrote there (marked) does not.
    monkeypatch.setenv("SMTRAIN_HOME", str(tmp_path / "home"))
    plan = plan_for(tmp_path, "src")
    write(tmp_path / "src", LEFT_BY_A_RUN)
    for written in ("job-1", "source/abc", "local-jobs"):
        mark(tmp_path / "src" / written)
    assert source_paths(check_bundle(plan).files) == {"train.py", "lib/util.py"}
