"""Big, deep and extreme code costs seconds and says what it skipped, never an internal error (issue 22):
scripts too large or too deeply nested to read are noted and skipped, a file larger than the whole bundle
may be is refused before it is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runner import smtrain
from tests.support.specfiles import write_spec

ARGPARSE = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=3)\n" \
           "args = p.parse_args()\n"
# What cannot be read: too large (5 MB), too deep for Python's parser (a long sum, one huge line), deeper
# than the bound (a call chain), and nested parentheses past the parser's limit (a syntax error, reported).
BIG = {
    "lines": "x = 1\n" * 850_000,
    "functions": "".join(f"def f{i}(a):\n    return a + {i}\n" for i in range(180_000)),
    "sum": "x = " + "+".join(["1"] * 10**6) + "\n",
}
DEEP = {
    "sum": "x = " + "+".join(["1"] * 300_000) + "\n",
    "calls": "x = f" + "()" * 2_500 + "\n",
    "subscripts": "x = a" + "[0]" * 1_000 + "\n",
}


def own_script(tmp_path: Path, body: str, **changes: object) -> str:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text(body)
    spec = {"compute": {"instance_type": "ml.g5.xlarge"}, "code": {"source_dir": "src", "entry_point": "train.py"}}
    spec.update(changes)
    return str(write_spec(tmp_path, spec))


@pytest.mark.parametrize("kind", sorted(BIG))
def test_a_script_over_the_bound_is_noted_not_read(tmp_path: Path, kind: str) -> None:
    spec = own_script(tmp_path, BIG[kind])
    proc = smtrain("validate", spec, "--strict")  # a note is no finding: --strict goes on
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if line.startswith("note: train.py: ")]
    assert len(notes) == 1 and "over the 0.5 MB" in notes[0] and "preflight scan skipped it" in notes[0], proc.stderr
    assert "valid" in proc.stdout


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_a_script_too_deep_to_read_is_noted_in_validate_and_init(tmp_path: Path, kind: str) -> None:
    spec = own_script(tmp_path, ARGPARSE + DEEP[kind])
    proc = smtrain("validate", spec)
    assert proc.returncode == 0, proc.stderr
    assert any(line.startswith("note: train.py: ") and "not read" in line for line in proc.stderr.splitlines())
    init = smtrain("init", "src/train.py", "new.yaml", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert "# the script could not be read (" in (tmp_path / "new.yaml").read_text()


def test_init_on_a_million_term_sum_writes_a_spec(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BIG["sum"])
    proc = smtrain("init", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "note: train.py: 2.0 MB, over the 0.5 MB" in proc.stderr
    assert "could not be read" in (tmp_path / "job.yaml").read_text()


def test_deep_parentheses_are_the_scripts_syntax_error(tmp_path: Path) -> None:
    spec = own_script(tmp_path, "x = " + "(" * 5_000 + "1" + ")" * 5_000 + "\n")
    proc = smtrain("validate", spec)
    assert proc.returncode == 0, proc.stderr
    assert "train.py:1: warning: cannot be parsed by Python" in proc.stderr


def test_a_chain_of_small_functions_is_followed_a_bounded_way(tmp_path: Path) -> None:
    # f0 calls f1 ... f2999 reads TF_CONFIG: following every caller would exhaust Python's stack.
    chain = "".join(f"def f{i}():\n    return f{i + 1}()\n" for i in range(3_000))
    body = "import os, json\n" + chain + "def f3000():\n    return json.loads(os.environ['TF_CONFIG'])\nf0()\n"
    spec = own_script(tmp_path, body)
    assert smtrain("validate", spec).returncode == 0
    assert smtrain("init", "src/train.py", "new.yaml", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("module", [DEEP["sum"], BIG["sum"], "x = a" + ".b" * 3_000 + "\n"])
def test_a_model_hook_module_that_cannot_be_read_is_a_warning(tmp_path: Path, module: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "models.py").write_text("def build():\n    return None\n" + module)
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "code": {"source_dir": "src"},
                                 "training": {"model": "models:build"}})
    proc = smtrain("validate", str(spec))
    assert proc.returncode == 0, proc.stderr
    assert "training.model: model hook models:build: models.py: " in proc.stderr
    assert "whether it defines build was not checked" in proc.stderr


def sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


@pytest.mark.parametrize("command", [("validate",), ("plan",), ("submit", "--dry-run")])
def test_a_file_larger_than_the_bundle_may_be_is_refused_unread(tmp_path: Path, command: tuple[str, ...]) -> None:
    spec = own_script(tmp_path, "print(1)\n")
    (tmp_path / "src" / "data").mkdir()
    sparse(tmp_path / "src" / "big.bin", 20 * 10**9)
    sparse(tmp_path / "src" / "data" / "disk [1].img", 10**9 + 1)  # over the bound, by a byte
    proc = smtrain(command[0], spec, *command[1:], timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "code.source_dir: 2 files over 1.0 GB (1000000000 bytes): data, not code; not read" in proc.stderr
    assert "  big.bin  20.0 GB (20000000000 bytes)" in proc.stderr
    assert "\n  /big.bin\n" in proc.stderr and "\n  /data/disk \\[1].img\n" in proc.stderr
    assert proc.stdout == ""
    (tmp_path / "src" / ".smtrainignore").write_text("/big.bin\n/data/disk \\[1].img\n")
    assert smtrain(command[0], spec, *command[1:], timeout=60).returncode == 0


def test_the_bound_follows_a_larger_code_max_bundle_size(tmp_path: Path) -> None:
    spec = own_script(tmp_path, "print(1)\n", code={"source_dir": "src", "entry_point": "train.py",
                                                     "max_bundle_size": "3GB"})
    sparse(tmp_path / "src" / "weights.h5", 4 * 10**9)
    proc = smtrain("validate", spec)
    assert proc.returncode == 2
    assert "a file over 3.0 GB (3000000000 bytes)" in proc.stderr and "weights.h5  4.0 GB" in proc.stderr
