"""What the bundle warns about (special files, large files) and the size refusal that needs no compressing."""

from __future__ import annotations

import os
import socket
import stat
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtrain.bundle import build
from smtrain.bundle.build import build_bundle, plan_bundle
from smtrain.bundle.ignore import ignore_line
from smtrain.bundle.model import BundleError
from smtrain.bundle.sizes import DEFLATE_MAX_RATIO, LARGE_FILE
from tests.bundle.test_bundle import file_names, write_tree


def sparse(path: Path, size: int) -> Path:
    """A file of `size` zero bytes that takes (almost) no disk space."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


# --------------------------------------------------------------------------- special files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_special_files_are_named_in_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "run/keep.txt": ""})
    os.mkfifo(src / "run" / "pipe")
    monkeypatch.chdir(src / "run")  # a socket's path is limited to ~100 bytes: bind it relative
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("daemon.sock")
        bundle = build_bundle(None, src)
    assert file_names(bundle) == {"train.py", "run/keep.txt"}
    assert bundle.skipped == ("run/daemon.sock", "run/pipe")
    [warning] = bundle.warnings
    assert "  run/daemon.sock  (socket)\n" in warning and "  run/pipe  (FIFO)\n" in warning
    assert "2 special files" in warning and ".smtrainignore" in warning


def test_a_device_is_named_in_the_warning(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": ""})
    try:
        os.mknod(src / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("making a device file needs privileges")
    [warning] = build_bundle(None, src).warnings
    assert "  null  (device)\n" in warning and "a special file" in warning


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_ignored_special_file_is_not_warned_about(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", ".smtrainignore": "/pipe\n"})
    os.mkfifo(src / "pipe")
    bundle = build_bundle(None, src)
    assert bundle.skipped == () and bundle.warnings == ()


# --------------------------------------------------------------------------- large files


def test_large_files_are_named_with_the_line_that_leaves_them_out(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "data/small.bin": b"\0" * 1000})
    sparse(src / "data" / "big.bin", LARGE_FILE + 1)
    sparse(src / "disk [1].img", 3 * LARGE_FILE)
    sparse(src / "edge.bin", LARGE_FILE)  # at the threshold: not over it
    planned = plan_bundle(None, src)
    [warning] = planned.warnings
    assert "2 files over 10 MB" in warning
    assert "  data/big.bin  10.0 MB (10000001 bytes)\n" in warning
    assert "  disk [1].img  30.0 MB (30000000 bytes)\n" in warning
    assert "edge.bin" not in warning and "small.bin" not in warning
    lines = warning.split(".smtrainignore leave them out:\n")[1].splitlines()
    assert lines == ["  /data/big.bin", r"  /disk \[1].img"]

    # The lines do what the warning says, and nothing more.
    (src / ".smtrainignore").write_text("".join(line.strip() + "\n" for line in lines))
    bundle = build_bundle(None, src)
    assert file_names(bundle) == {"train.py", "data/small.bin", "edge.bin"}
    assert bundle.warnings == ()


def test_warned_large_file_still_packs_deterministically(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": ""})
    sparse(src / "zeros.bin", LARGE_FILE + 5)
    one, two = build_bundle(None, src), build_bundle(None, src)
    assert one.data == two.data and one.warnings == two.warnings and len(one.warnings) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(string.ascii_letters + string.digits + " *?[]!#\\-._", min_size=1, max_size=8)
                .filter(lambda n: n not in (".", "..")),
                min_size=1, max_size=3))
def test_ignore_line_leaves_out_exactly_that_file(tmp_path_factory: pytest.TempPathFactory, parts: list[str]) -> None:
    import pathspec

    rel = "/".join(parts)
    line = ignore_line(rel)
    spec = pathspec.GitIgnoreSpec.from_lines([line])
    assert spec.match_file(rel), line
    # A file next to it (its name changed by one character) stays.
    assert not spec.match_file(rel + "x") and not spec.match_file("x" + rel)


# --------------------------------------------------------------------------- hopeless totals


def test_a_total_that_cannot_fit_is_refused_before_compressing(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def no_packing(*args: object) -> None:
        raise AssertionError("the archive was written")

    monkeypatch.setattr(build, "write_archive", no_packing)
    src = write_tree(tmp_path / "src", {"train.py": ""})
    sparse(src / "disk.img", 10**9)  # sparse files, 2 GB in all (each under the 1 GB a file may have):
    sparse(src / "disk2.img", 10**9)  # at least 1.9 MB compressed
    with pytest.raises(BundleError) as err:
        build_bundle(None, src, max_size=10**6)
    message = str(err.value)
    assert "at least 1.9 MB" in message and "over the limit of 1.0 MB" in message
    assert "  disk.img  1.0 GB (1000000000 bytes)" in message
    with pytest.raises(BundleError, match="at least 1.9 MB"):
        plan_bundle(None, src, max_size=10**6)


def test_the_refusal_never_stops_a_bundle_that_fits(tmp_path: Path) -> None:
    # Zeros compress best of all: even they come out above total / DEFLATE_MAX_RATIO, so a total
    # just under the bound is packed, not refused.
    src = write_tree(tmp_path / "src", {})
    sparse(src / "zeros.bin", 20 * 10**6)
    bundle = build_bundle(None, src)
    assert bundle.size >= bundle.uncompressed_size / DEFLATE_MAX_RATIO
    assert build_bundle(None, src, max_size=bundle.size).data == bundle.data
