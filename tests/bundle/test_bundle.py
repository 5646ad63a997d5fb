"""Tests of smtrain.bundle.build on real files: determinism, layout, ignore rules and refusals."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import random
import string
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtrain.bundle.archive import BUNDLE_MTIME
from smtrain.bundle.build import build_bundle, s3_key_for
from smtrain.bundle.model import Bundle, BundleError

ENTRY_FILES = {
    "smtrain_entry.py": "import smtrain_tf\n",
    "smtrain_tf/__init__.py": "",
    "smtrain_tf/loop.py": "def run():\n    pass\n",
    "README.md": "entry point docs\n",
}


def write_tree(root: Path, files: dict[str, str | bytes], order: list[str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel in order if order is not None else list(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        content = files[rel]
        if isinstance(content, str):
            path.write_text(content)
        else:
            path.write_bytes(content)
    return root


@pytest.fixture
def entry(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "entry", ENTRY_FILES)


def members(bundle: Bundle) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(bundle.data), mode="r:gz") as tar:
        return {m.name: m for m in tar.getmembers()}


def contents(bundle: Bundle) -> dict[str, bytes]:
    out = {}
    with tarfile.open(fileobj=io.BytesIO(bundle.data), mode="r:gz") as tar:
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                out[m.name] = f.read()
    return out


def file_names(bundle: Bundle) -> set[str]:
    return {m.name for m in members(bundle).values() if m.isfile()}


def build_src(tmp_path: Path, files: dict[str, str | bytes], **kwargs: object) -> Bundle:
    src = write_tree(tmp_path / "src", files)
    return build_bundle(None, src, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- determinism

SOURCE = {
    "train.py": "print('train')\n",
    "run.sh": "#!/bin/sh\npython train.py\n",
    "pkg/__init__.py": "",
    "pkg/model.py": "class Model: ...\n",
    "pkg/sub/deep.py": "X = 1\n",
    "a-b.txt": "sorts between a and a/\n",
    "a/x.txt": "x\n",
    "configs/base.yaml": "lr: 0.1\n",
    "requirements.txt": "numpy\n",
}


def _make_copy(root: Path, order: list[str], file_mode: int, exec_mode: int, mtime: int) -> Path:
    write_tree(root, SOURCE, order)
    for rel in SOURCE:
        path = root / rel
        os.chmod(path, exec_mode if rel == "run.sh" else file_mode)
        os.utime(path, (mtime, mtime))
    for d in (root / "pkg", root / "pkg" / "sub", root / "a", root / "configs", root):
        os.utime(d, (mtime, mtime))
    return root


def test_same_tree_in_two_places_gives_identical_bytes(tmp_path: Path) -> None:
    order = list(SOURCE)
    one = _make_copy(tmp_path / "first" / "src", order, 0o644, 0o755, 1_600_000_000)
    two = _make_copy(tmp_path / "elsewhere" / "deeper" / "code", order[::-1], 0o600, 0o700, 1_700_000_123)
    entry_one = write_tree(tmp_path / "e1", ENTRY_FILES)
    entry_two = write_tree(tmp_path / "e2" / "x", ENTRY_FILES, list(ENTRY_FILES)[::-1])
    os.chmod(entry_two / "README.md", 0o664)

    b1 = build_bundle(entry_one, one, exclude_entrypoint_files=["README.md"])
    b2 = build_bundle(entry_two, two, exclude_entrypoint_files=["README.md"])
    assert b1.data == b2.data
    assert b1.sha256 == b2.sha256 == hashlib.sha256(b1.data).hexdigest()
    assert b1.files == b2.files
    # A rebuild of the same tree is identical too.
    assert build_bundle(entry_one, one, exclude_entrypoint_files=["README.md"]).data == b1.data


def test_content_change_changes_digest(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", SOURCE)
    before = build_bundle(None, src)
    (src / "pkg" / "model.py").write_text("class Model: pass\n")
    after = build_bundle(None, src)
    assert before.sha256 != after.sha256


def test_exec_bit_is_kept_and_other_bits_normalised(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", SOURCE)
    os.chmod(src / "run.sh", 0o744)
    os.chmod(src / "train.py", 0o600)
    m = members(build_bundle(None, src))
    assert m["run.sh"].mode == 0o755
    assert m["train.py"].mode == 0o644


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.lists(st.text(string.ascii_lowercase + "_.-", min_size=1, max_size=6), min_size=1, max_size=3).map(
            lambda parts: "/".join("f" + p for p in parts)
        ),
        st.binary(max_size=64),
        min_size=1,
        max_size=12,
    ),
    st.randoms(use_true_random=False),
)
def test_creation_order_never_matters(files: dict[str, bytes], rnd: random.Random) -> None:
    # Drop paths that would need a file to also be a directory, and bytecode, always left out.
    names = sorted(files)
    files = {
        n: files[n]
        for n in names
        if not any(o.startswith(n + "/") for o in names) and not n.endswith((".pyc", ".pyo"))
    }
    order = list(files)
    shuffled = order[:]
    rnd.shuffle(shuffled)
    with tempfile.TemporaryDirectory() as tmp:
        one = write_tree(Path(tmp) / "one", files, order)
        two = write_tree(Path(tmp) / "b" / "two", files, shuffled)
        # Generated names may look like keys ("f.key"); the secret guard is tested elsewhere.
        b1 = build_bundle(None, one, allow=["*"])
        b2 = build_bundle(None, two, allow=["*"])
    assert b1.data == b2.data
    assert contents(b1) == files


# --------------------------------------------------------------------------- layout


def test_archive_layout_and_metadata(tmp_path: Path, entry: Path) -> None:
    src = write_tree(tmp_path / "src", {k: v for k, v in SOURCE.items() if k != "requirements.txt"})
    reqs = write_tree(tmp_path / "elsewhere", {"reqs.txt": "pandas==2.2\n"}) / "reqs.txt"
    bundle = build_bundle(entry, src, reqs, exclude_entrypoint_files=["README.md"])

    files = contents(bundle)
    expected = {
        "smtrain_entry.py",
        "smtrain_tf/__init__.py",
        "smtrain_tf/loop.py",
        "train.py",
        "run.sh",
        "pkg/__init__.py",
        "pkg/model.py",
        "pkg/sub/deep.py",
        "a-b.txt",
        "a/x.txt",
        "configs/base.yaml",
        "requirements.txt",
    }
    assert set(files) == expected
    assert files["requirements.txt"] == b"pandas==2.2\n"
    assert files["smtrain_tf/loop.py"] == ENTRY_FILES["smtrain_tf/loop.py"].encode()

    m = members(bundle)
    dirs = {name for name, info in m.items() if info.isdir()}
    assert dirs == {"smtrain_tf", "pkg", "pkg/sub", "a", "configs"}
    for info in m.values():
        assert info.mtime == BUNDLE_MTIME
        assert (info.uid, info.gid, info.uname, info.gname) == (0, 0, "", "")
        assert info.isfile() or info.isdir()
        assert info.mode in (0o644, 0o755)
        if info.isdir():
            assert info.mode == 0o755

    # Entries are sorted by path component, each directory before its contents.
    with tarfile.open(fileobj=io.BytesIO(bundle.data), mode="r:gz") as tar:
        order = tar.getnames()
    assert order == sorted(order, key=lambda p: p.split("/"))
    assert order.index("a") < order.index("a/x.txt") < order.index("a-b.txt")
    assert [f.path for f in bundle.files] == [n for n in order if m[n].isfile()]

    origins = {f.path: f.origin for f in bundle.files}
    assert origins["smtrain_entry.py"] == "entrypoint"
    assert origins["pkg/model.py"] == "source"
    assert origins["requirements.txt"] == "requirements"
    assert {f.path: f.size for f in bundle.files}["requirements.txt"] == len(b"pandas==2.2\n")


def test_gzip_header_is_fixed(tmp_path: Path, entry: Path) -> None:
    bundle = build_bundle(entry, write_tree(tmp_path / "src", {"train.py": "x = 1\n"}))
    data = bundle.data
    assert data[:3] == b"\x1f\x8b\x08"
    assert data[3] == 0  # no flags: no file name, no comment
    assert data[4:8] == b"\x00\x00\x00\x00"  # mtime 0
    assert data[9] == 0xFF  # OS "unknown", whatever the building platform
    assert bundle.size == len(data)
    gzip.decompress(data)  # the CRC and length trailer are valid


def test_large_files_stream_into_a_standard_tar(tmp_path: Path) -> None:
    rnd = random.Random(3)
    files: dict[str, str | bytes] = {
        "weights/big.bin": rnd.randbytes(3 * 2**20 + 17),  # streamed in pieces
        "weights/exact.bin": rnd.randbytes(2**20),
        "train.py": "x = 1\n",
        "a" * 120 + "/long_name.py": "# needs a PAX header\n",
        "unicode/caf\u00e9.py": "# non-ASCII name\n",
    }
    bundle = build_src(tmp_path, files)
    assert contents(bundle) == {k: v.encode() if isinstance(v, str) else v for k, v in files.items()}
    # The hand-made framing matches what tarfile itself writes for the same members.
    raw = gzip.decompress(bundle.data)
    with tarfile.open(fileobj=io.BytesIO(raw)) as src:
        again = io.BytesIO()
        with tarfile.open(fileobj=again, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as out:
            for m in src.getmembers():
                out.addfile(m, src.extractfile(m) if m.isfile() else None)
    assert again.getvalue() == raw


def test_requirements_relative_to_source_dir(tmp_path: Path) -> None:
    bundle = build_src(tmp_path, {"train.py": "", "deps/prod.txt": "scipy\n"}, requirements="deps/prod.txt")
    files = contents(bundle)
    assert files["requirements.txt"] == b"scipy\n"
    assert files["deps/prod.txt"] == b"scipy\n"


def test_requirements_same_as_root_file_is_bundled_once(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "requirements.txt": "numpy\n"})
    for req in ("requirements.txt", src / "requirements.txt"):
        bundle = build_bundle(None, src, req)
        paths = [f.path for f in bundle.files]
        assert paths.count("requirements.txt") == 1
        assert {f.path: f.origin for f in bundle.files}["requirements.txt"] == "requirements"


def test_requirements_elsewhere_with_root_file_is_an_error(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "requirements.txt": "numpy\n", "other.txt": "x\n"})
    with pytest.raises(BundleError, match="requirements.txt") as err:
        build_bundle(None, src, "other.txt")
    assert "other.txt" in str(err.value)


def test_root_requirements_without_option_ships_as_source(tmp_path: Path) -> None:
    bundle = build_src(tmp_path, {"train.py": "", "requirements.txt": "numpy\n"})
    assert {f.path: f.origin for f in bundle.files}["requirements.txt"] == "source"


def test_only_entrypoint(entry: Path) -> None:
    bundle = build_bundle(entry)
    assert file_names(bundle) == set(ENTRY_FILES)


def test_entrypoint_caches_are_left_out(entry: Path) -> None:
    write_tree(entry, {"__pycache__/smtrain_entry.cpython-311.pyc": b"\0", "smtrain_tf/old.pyc": b"\0"})
    assert file_names(build_bundle(entry)) == set(ENTRY_FILES)


# --------------------------------------------------------------------------- ignore rules


def test_smtrainignore_rules(tmp_path: Path) -> None:
    bundle = build_src(
        tmp_path,
        {
            ".smtrainignore": "# comment\n*.txt\n!keep.txt\ndata/\n/build\nnotebooks/**/*.ipynb\n",
            "train.py": "",
            "notes.txt": "",
            "keep.txt": "",
            "sub/keep.txt": "",
            "sub/other.txt": "",
            "data/train.csv": "",
            "data/more/x.py": "",
            "src/data/y.py": "",
            "build": "",
            "pkg/build": "",
            "notebooks/a/b/explore.ipynb": "",
            "notebooks/helper.py": "",
        },
    )
    assert file_names(bundle) == {
        "train.py",
        "keep.txt",
        "sub/keep.txt",
        "pkg/build",
        "notebooks/helper.py",
    }


def test_gitignore_rules_and_opt_out(tmp_path: Path) -> None:
    files = {
        ".gitignore": "*.log\ncheckpoints/\n",
        ".smtrainignore": "scratch.py\n",
        "train.py": "",
        "run.log": "",
        "checkpoints/ckpt-1.index": "",
        "scratch.py": "",
    }
    src = write_tree(tmp_path / "src", files)
    assert file_names(build_bundle(None, src)) == {".gitignore", "train.py"}
    # Without git's rules the .smtrainignore still applies.
    assert file_names(build_bundle(None, src, use_gitignore=False)) == {
        ".gitignore",
        "train.py",
        "run.log",
        "checkpoints/ckpt-1.index",
    }


def test_nested_gitignore(tmp_path: Path) -> None:
    bundle = build_src(
        tmp_path,
        {
            ".gitignore": "*.tmp\n",
            "train.py": "",
            "a.tmp": "",
            "pkg/.gitignore": "generated.py\n!special.tmp\n",
            "pkg/generated.py": "",
            "pkg/special.tmp": "",
            "pkg/other.tmp": "",
            "generated.py": "",
            # pytest's cache directory ignores itself this way.
            "cache/.gitignore": "*\n",
            "cache/v/lastfailed": "",
        },
    )
    assert file_names(bundle) == {
        ".gitignore",
        "train.py",
        "pkg/.gitignore",
        "pkg/special.tmp",
        "generated.py",
    }


def test_negation_inside_an_excluded_directory(tmp_path: Path) -> None:
    # pathspec's GitIgnoreSpec lets an explicit negation bring a file back from an excluded dir.
    bundle = build_src(
        tmp_path,
        {".smtrainignore": "data/\n!data/vocab.txt\n", "data/vocab.txt": "", "data/big.csv": "", "t.py": ""},
    )
    assert file_names(bundle) == {"data/vocab.txt", "t.py"}


def test_smtrainignore_negation_beats_gitignore(tmp_path: Path) -> None:
    bundle = build_src(
        tmp_path,
        {
            ".gitignore": "*.csv\n",
            ".smtrainignore": "!vocab.csv\n",
            "vocab.csv": "",
            "big.csv": "",
            "t.py": "",
        },
    )
    assert file_names(bundle) == {".gitignore", "vocab.csv", "t.py"}


def test_enclosing_repository_gitignore_applies(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {
            ".gitignore": "*.ckpt\n/src/local_only.py\nunrelated/\n",
            "src/train.py": "",
            "src/model.ckpt": "",
            "src/local_only.py": "",
            "src/unrelated/x.py": "",
        },
    )
    (repo / ".git").mkdir()
    src = repo / "src"
    assert file_names(build_bundle(None, src)) == {"train.py"}
    assert file_names(build_bundle(None, src, use_gitignore=False)) == {
        "train.py",
        "model.ckpt",
        "local_only.py",
        "unrelated/x.py",
    }


def test_enclosing_gitignore_that_ignores_the_source_dir_is_not_applied(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {".gitignore": "build/\n", "build/code/train.py": ""})
    (repo / ".git").mkdir()
    assert file_names(build_bundle(None, repo / "build" / "code")) == {"train.py"}


def test_always_excluded(tmp_path: Path) -> None:
    src = write_tree(
        tmp_path / "src",
        {
            ".smtrainignore": "!*\n",  # even an explicit negation does not bring these back
            "train.py": "",
            ".git/config": "",
            ".git/objects/ab/cdef": "",
            "pkg/__pycache__/m.cpython-311.pyc": b"\0",
            "pkg/m.py": "",
            "pkg/stale.pyc": b"\0",
            ".venv/lib/site.py": "",
            "venv/bin/python": "",
            "myenv/pyvenv.cfg": "home = /usr\n",
            "myenv/lib/x.py": "",
            "sub/.smtrainignore": "",
            ".pytest_cache/v/cache": "",
        },
    )
    assert file_names(build_bundle(None, src)) == {"train.py", "pkg/m.py"}


# --------------------------------------------------------------------------- secrets


@pytest.mark.parametrize(
    "secret",
    [
        ".env",
        ".env.production",
        "conf/.env",
        "server.pem",
        "tls.key",
        "id_rsa",
        "keys/id_ed25519",
        "id_ecdsa",
        ".aws/credentials",
        ".aws/config",
        "credentials",
        ".netrc",
        ".pypirc",
        "cert.p12",
        "cert.pfx",
        ".npmrc",
        ".ssh/known_hosts",
    ],
)
def test_secret_is_refused(tmp_path: Path, secret: str) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", secret: "s3cr3t"})
    with pytest.raises(BundleError) as err:
        build_bundle(None, src)
    message = str(err.value)
    assert secret in message
    assert "code.allow_secrets" in message
    assert ".smtrainignore" in message


def test_every_secret_is_named(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", ".env": "", "a/b.pem": "", "id_rsa": ""})
    with pytest.raises(BundleError) as err:
        build_bundle(None, src)
    for name in (".env", "a/b.pem", "id_rsa"):
        assert name in str(err.value)
    assert "train.py" not in str(err.value)


def test_secret_allowed_by_pattern(tmp_path: Path) -> None:
    src = write_tree(
        tmp_path / "src", {"train.py": "", "certs/ca.pem": "", "certs/other.pem": "", ".env": ""}
    )
    bundle = build_bundle(None, src, allow=["certs/*.pem", "/.env"])
    assert file_names(bundle) == {"train.py", "certs/ca.pem", "certs/other.pem", ".env"}
    with pytest.raises(BundleError) as err:
        build_bundle(None, src, allow=["certs/ca.pem"])
    assert "certs/other.pem" in str(err.value)
    assert "certs/ca.pem" not in str(err.value)


def test_ignored_secret_is_fine(tmp_path: Path) -> None:
    bundle = build_src(
        tmp_path,
        {".smtrainignore": ".env\n", ".gitignore": "*.pem\n", "train.py": "", ".env": "", "k.pem": ""},
    )
    assert file_names(bundle) == {".gitignore", "train.py"}


def test_templates_and_public_keys_are_not_secrets(tmp_path: Path) -> None:
    bundle = build_src(tmp_path, {".env.example": "KEY=", "deploy/id_ed25519.pub": "ssh-ed25519 AAAA"})
    assert file_names(bundle) == {".env.example", "deploy/id_ed25519.pub"}


def test_link_to_a_secret_is_refused(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "secret/.env": ""})
    (src / ".smtrainignore").write_text("secret/\n")
    os.symlink("secret/.env", src / "settings.cfg")
    with pytest.raises(BundleError, match="settings.cfg"):
        build_bundle(None, src)


# --------------------------------------------------------------------------- symlinks


def test_symlink_outside_is_refused(tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"data.py": "X = 1\n"})
    src = write_tree(tmp_path / "src", {"train.py": ""})
    os.symlink(outside / "data.py", src / "data.py")
    with pytest.raises(BundleError) as err:
        build_bundle(None, src)
    assert "data.py" in str(err.value)
    assert str(outside / "data.py") in str(err.value)


def test_symlinked_directory_outside_is_refused(tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"lib.py": ""})
    src = write_tree(tmp_path / "src", {"train.py": ""})
    os.symlink(outside, src / "shared")
    with pytest.raises(BundleError, match="shared"):
        build_bundle(None, src)


def test_ignored_symlink_outside_is_fine(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", ".smtrainignore": "datasets\n"})
    os.symlink(tmp_path, src / "datasets")
    assert file_names(build_bundle(None, src)) == {"train.py"}


def test_symlink_inside_is_stored_as_file(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "configs/base.yaml": "lr: 1\n"})
    os.symlink("configs/base.yaml", src / "config.yaml")
    os.symlink("configs", src / "conf")
    bundle = build_bundle(None, src)
    m = members(bundle)
    assert not any(info.issym() or info.islnk() for info in m.values())
    files = contents(bundle)
    assert files["config.yaml"] == b"lr: 1\n"
    assert files["conf/base.yaml"] == b"lr: 1\n"


def test_symlinked_source_dir_itself(tmp_path: Path) -> None:
    real = write_tree(tmp_path / "real", {"train.py": "", "lib/x.py": ""})
    os.symlink("lib/x.py", real / "y.py")
    os.symlink(real, tmp_path / "alias")
    assert file_names(build_bundle(None, tmp_path / "alias")) == {"train.py", "lib/x.py", "y.py"}


def test_broken_symlink_is_refused(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": ""})
    os.symlink("missing.py", src / "gone.py")
    with pytest.raises(BundleError, match="gone.py.*broken"):
        build_bundle(None, src)


def test_symlink_loop_is_refused(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "pkg/m.py": ""})
    os.symlink("..", src / "pkg" / "up")
    with pytest.raises(BundleError, match="pkg/up"):
        build_bundle(None, src)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_special_files_are_skipped_and_reported(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": ""})
    os.mkfifo(src / "pipe")
    bundle = build_bundle(None, src)
    assert file_names(bundle) == {"train.py"}
    assert bundle.skipped == ("pipe",)


# --------------------------------------------------------------------------- clashes and errors


def test_clash_with_entrypoint_file(tmp_path: Path, entry: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "smtrain_entry.py": ""})
    with pytest.raises(BundleError, match="smtrain_entry.py"):
        build_bundle(entry, src, exclude_entrypoint_files=["README.md"])


def test_clash_inside_entrypoint_package(tmp_path: Path, entry: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "smtrain_tf/mine.py": ""})
    with pytest.raises(BundleError, match="smtrain_tf/mine.py"):
        build_bundle(entry, src, exclude_entrypoint_files=["README.md"])


def test_excluded_entrypoint_file_frees_its_name(tmp_path: Path, entry: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "README.md": "mine\n"})
    with pytest.raises(BundleError, match="README.md"):
        build_bundle(entry, src)
    bundle = build_bundle(entry, src, exclude_entrypoint_files=["README.md"])
    assert contents(bundle)["README.md"] == b"mine\n"
    assert {f.path: f.origin for f in bundle.files}["README.md"] == "source"


def test_missing_paths_are_named(tmp_path: Path, entry: Path) -> None:
    with pytest.raises(BundleError, match="nope"):
        build_bundle(entry, tmp_path / "nope")
    src = write_tree(tmp_path / "src", {"train.py": ""})
    with pytest.raises(BundleError, match="reqs-missing.txt"):
        build_bundle(entry, src, "reqs-missing.txt")
    with pytest.raises(BundleError, match="no-entry"):
        build_bundle(tmp_path / "no-entry", src)
    with pytest.raises(BundleError, match="not a directory"):
        build_bundle(entry, src / "train.py")
    with pytest.raises(BundleError, match="not a regular file"):
        build_bundle(entry, src, ".")


def test_errors_name_the_spec_field_they_concern(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", ".env": ""})
    with pytest.raises(BundleError) as err:
        build_bundle(None, src, "missing.txt", allow=[".env"])
    assert err.value.field == ("code", "requirements")
    with pytest.raises(BundleError) as err:
        build_bundle(None, src)
    assert err.value.field == ("code", "source_dir")


def test_size_limit_names_the_largest_files(tmp_path: Path) -> None:
    rnd = random.Random(7)
    sizes = {f"blob{i}.bin": 10_000 * (i + 1) for i in range(7)}
    files: dict[str, str | bytes] = {name: rnd.randbytes(size) for name, size in sizes.items()}
    src = write_tree(tmp_path / "src", files)
    unlimited = build_bundle(None, src)
    limit = unlimited.size - 1
    with pytest.raises(BundleError) as err:
        build_bundle(None, src, max_size=limit)
    message = str(err.value)
    assert str(unlimited.size) in message
    assert str(limit) in message
    for name in ("blob6.bin", "blob5.bin", "blob4.bin", "blob3.bin", "blob2.bin"):
        assert name in message
        assert str(sizes[name]) in message
    assert "blob1.bin" not in message and "blob0.bin" not in message
    assert build_bundle(None, src, max_size=unlimited.size).data == unlimited.data


def test_size_limit_stops_early_on_a_huge_bundle(tmp_path: Path) -> None:
    # Incompressible data: compressing stops once the output is far over the limit. (The total is
    # under 1032 x the limit, so the refusal before compressing does not apply.)
    src = write_tree(tmp_path / "src", {"data.bin": random.Random(1).randbytes(3_000_000)})
    with pytest.raises(BundleError, match=r"more than .* over the limit of 10.0 KB"):
        build_bundle(None, src, max_size=10_000)


# --------------------------------------------------------------------------- S3 key


def test_s3_key_for(tmp_path: Path) -> None:
    bundle = build_src(tmp_path, {"train.py": ""})
    digest = bundle.sha256
    assert len(digest) == 64
    assert (
        s3_key_for("s3://bucket/jobs/out", bundle) == f"s3://bucket/jobs/out/source/{digest}/sourcedir.tar.gz"
    )
    assert (
        s3_key_for("s3://bucket/jobs/out/", bundle)
        == f"s3://bucket/jobs/out/source/{digest}/sourcedir.tar.gz"
    )
    assert s3_key_for("s3://bucket", bundle) == f"s3://bucket/source/{digest}/sourcedir.tar.gz"
    for bad in ("bucket/out", "s3://", "https://bucket.example.invalid/x"):
        with pytest.raises(ValueError):
            s3_key_for(bad, bundle)


def test_dependencies_ship_at_the_root_under_their_names_with_their_own_ignore_rules(tmp_path):
    from smtrain.bundle.build import BundleError, plan_bundle

    src, lib, other = tmp_path / "src", tmp_path / "shared" / "lib", tmp_path / "utils"
    for place in (src, lib / "sub", other):
        place.mkdir(parents=True)
    (src / "train.py").write_text("import lib.helpers\n")
    (lib / "helpers.py").write_text("X = 1\n")
    (lib / "sub" / "more.py").write_text("Y = 2\n")
    (lib / "notes.log").write_text("log\n")
    (lib / ".smtrainignore").write_text("*.log\n")
    (other / "u.py").write_text("Z = 3\n")
    planned = plan_bundle(None, src, dependencies=[lib, other])
    assert sorted(f.path for f in planned.files) == ["lib/helpers.py", "lib/sub/more.py", "train.py", "utils/u.py"]
    (src / "lib").mkdir()
    (src / "lib" / "x.py").write_text("\n")
    with pytest.raises(BundleError, match="^lib/ would land on source_dir's own lib"):
        plan_bundle(None, src, dependencies=[lib])
    with pytest.raises(BundleError, match="is not a directory"):
        plan_bundle(None, src, dependencies=[src / "train.py"])
