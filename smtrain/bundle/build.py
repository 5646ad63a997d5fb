"""Build the deterministic, content-addressed ``sourcedir.tar.gz`` a training job runs from.

SageMaker unpacks the archive into /opt/ml/code, pip-installs a ``requirements.txt`` found at
its root, then starts the entry point. The archive holds three things, all at its root:

* the bundled entry point (``smtrain_entry.py`` and ``smtrain_tf/``, see entrypoint.py),
* the user's ``code.source_dir``,
* the user's requirements file, stored as ``requirements.txt``.

Determinism: the same inputs give the same bytes (and so the same sha256 and S3 key) whatever
the file mtimes, owners, umask, directory listing order or absolute location of the tree.
Entries are sorted by path component; every entry has mtime ``BUNDLE_MTIME``
(1980-01-01T00:00:00Z), uid/gid 0 and empty owner names; files are 0o644, or 0o755 when any
execute bit is set, directories 0o755; the tar format is PAX; the gzip header carries mtime 0,
no file name and OS "unknown", and the deflate level is fixed. Caveat: the compressed bytes come
from the platform's zlib, so a different zlib implementation (zlib-ng, say) could compress the
same tar differently; that only costs a second upload, never a wrong job.

Layout decisions:

* Directory entries are written for every directory that holds a bundled file, so extraction
  does not depend on the extracting process's umask. Empty directories are left out (as git
  does).
* Symbolic links are followed and stored as the file (or directory) they point to, so the
  archive never contains a link. A link whose target lies outside its tree, a broken link and a
  link back to one of its own parent directories are errors.
* Sockets, FIFOs and device files cannot be archived; they are skipped and listed in
  ``Bundle.skipped`` so the caller can warn about them.

Ignore rules (source dir only), strongest first:

1. always left out: ``.git``, ``.hg``, ``.svn``, ``__pycache__``, tool caches
   (``.pytest_cache``, ``.mypy_cache``, ``.ruff_cache``), ``*.pyc``/``*.pyo``, virtual
   environments (a directory named ``.venv``/``venv`` or holding ``pyvenv.cfg`` or
   ``conda-meta``), and ``.smtrainignore`` files;
2. ``.smtrainignore`` at the root of the source dir;
3. ``.gitignore`` files (unless ``use_gitignore=False``): those inside the source dir, the
   deepest one first, then those of the enclosing git repository between the source dir and
   the repository's root. Global git excludes are never read, since they differ per machine.

Patterns follow ``pathspec.GitIgnoreSpec``, which lets a negation such as ``!data/keep.txt``
bring a file back even from an excluded directory.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import pathspec

from smtrain.bundle.archive import TooLarge, sort_key, write_archive
from smtrain.bundle.ignore import source_rules
from smtrain.bundle.model import ARCHIVE_NAME, REQUIREMENTS_NAME, Bundle, BundleError, PlannedFile
from smtrain.bundle.walk import walk_tree


def _human(num_bytes: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.1f} {unit} ({num_bytes} bytes)"
    return f"{num_bytes} bytes"


def _size_error(size: int, exact: bool, max_size: int, planned: list[PlannedFile]) -> BundleError:
    largest = sorted(planned, key=lambda p: (-p.size, p.path))[:5]
    listing = "\n".join(f"  {p.path}  {_human(p.size)}" for p in largest)
    amount = _human(size) if exact else f"more than {_human(size)}"
    return BundleError(
        f"the code bundle is {amount} compressed, over the limit of {_human(max_size)}.\n"
        f"Largest files:\n{listing}\n"
        "Leave data out of code.source_dir (list it in .smtrainignore) and read it from S3 instead."
    )


def _resolve_requirements(requirements: Path | str, source_dir: Path | None) -> Path:
    path = Path(requirements)
    if not path.is_absolute() and source_dir is not None:
        path = source_dir / path
    if not path.exists():
        raise BundleError(f"requirements file not found: {path}")
    if not path.is_file():
        raise BundleError(f"requirements file is not a regular file: {path}")
    return path


def _entrypoint_roots(entrypoint: Path | Sequence[Path] | None) -> list[tuple[Path, str]]:
    """(path, archive prefix) pairs: a directory's contents at the root, or each part under its name."""
    if entrypoint is None:
        return []
    if isinstance(entrypoint, (str, os.PathLike)):
        root = Path(entrypoint)
        if not root.is_dir():
            raise BundleError(f"entry point directory not found: {root}")
        return [(root, "")]
    roots = []
    for part in map(Path, entrypoint):
        if not part.exists():
            raise BundleError(f"bundled entry point file not found: {part}")
        roots.append((part, part.name + "/" if part.is_dir() else part.name))
    return roots


def build_bundle(
    entrypoint: Path | Sequence[Path] | None,
    source_dir: Path | None = None,
    requirements: Path | str | None = None,
    *,
    use_gitignore: bool = True,
    allow: Sequence[str] = (),
    max_size: int | None = None,
    exclude_entrypoint_files: Sequence[str] = (),
) -> Bundle:
    """Build the archive from the entry point, the user's source dir and requirements file.

    `entrypoint` is a directory whose contents go to the archive's root, or a list of files and
    directories that go there under their own names (the installed smtrain_entry.py and smtrain_tf/).

    `requirements` is relative to `source_dir` when that is given (else to the working
    directory) unless absolute. `allow` holds gitignore-style patterns of archive paths that may
    ship although they look like secrets; `exclude_entrypoint_files` holds gitignore-style
    patterns of entry point files to leave out. `max_size` limits the compressed size in bytes.
    Raises BundleError with a message for the user on any problem.
    """
    if max_size is not None and max_size < 0:
        raise ValueError("max_size cannot be negative")
    if isinstance(allow, str) or isinstance(exclude_entrypoint_files, str):
        raise TypeError("allow and exclude_entrypoint_files take a sequence of patterns, not a string")

    skipped: list[str] = []
    problems: list[str] = []

    entry_files: list[PlannedFile] = []
    for root, prefix in _entrypoint_roots(entrypoint):
        if not root.is_dir():
            st = os.stat(root)
            entry_files.append(PlannedFile(prefix, str(root), st.st_size, bool(st.st_mode & 0o111), "entrypoint"))
            continue
        walk = walk_tree(root, "entrypoint", rules=None, use_gitignore=False, smtrainignore_count=0,
                         check_secrets=False, prefix=prefix)
        entry_files += walk.files
        skipped += walk.skipped
        problems += walk.problems
    excluded = pathspec.GitIgnoreSpec.from_lines(list(exclude_entrypoint_files))
    entry_files = [f for f in entry_files if not excluded.match_file(f.path)]

    source_files: list[PlannedFile] = []
    secrets: list[tuple[str, str]] = []
    if source_dir is not None:
        source_dir = Path(source_dir)
        if not source_dir.exists():
            raise BundleError(f"code.source_dir not found: {source_dir}")
        if not source_dir.is_dir():
            raise BundleError(f"code.source_dir is not a directory: {source_dir}")
        rules, smt_count = source_rules(source_dir, use_gitignore)
        walk = walk_tree(
            source_dir,
            "source",
            rules=rules,
            use_gitignore=use_gitignore,
            smtrainignore_count=smt_count,
            check_secrets=True,
        )
        source_files = walk.files
        skipped += walk.skipped
        problems += walk.problems
        secrets = walk.secrets

    if problems:
        raise BundleError("cannot bundle the code:\n" + "\n".join(f"  {p}" for p in problems))

    if secrets:
        allowed = pathspec.GitIgnoreSpec.from_lines(list(allow))
        refused = [shown for rel, shown in secrets if not allowed.match_file(rel)]
        if refused:
            raise BundleError(
                "refusing to upload files that look like secrets:\n"
                + "\n".join(f"  {s}" for s in refused)
                + "\nIf they are meant to ship with the code, add their paths to code.allow_secrets; "
                "otherwise list them in .smtrainignore."
            )

    if requirements is not None:
        req_path = _resolve_requirements(requirements, source_dir)
        at_root = next((f for f in source_files if f.path == REQUIREMENTS_NAME), None)
        if at_root is not None:
            if not os.path.samefile(at_root.source, req_path):
                raise BundleError(
                    f"code.source_dir has its own {REQUIREMENTS_NAME} while code.requirements points "
                    f"to another file ({req_path}); remove one of them, or point code.requirements "
                    f"at {REQUIREMENTS_NAME}"
                )
            source_files.remove(at_root)  # the same file: ship it once
        st = os.stat(req_path)
        source_files.append(PlannedFile(REQUIREMENTS_NAME, str(req_path), st.st_size, False, "requirements"))

    # The entry point's top-level names are reserved: a user file there would replace ours, or
    # mix into our package.
    entry_paths = {f.path for f in entry_files}
    reserved = {p.split("/")[0] for p in entry_paths}
    clashes = []
    for f in source_files:
        top = f.path.split("/")[0]
        if top in reserved:
            what = "requirements file" if f.origin == "requirements" else "file"
            if f.path in entry_paths:
                clashes.append(f"  {what} {f.path} has the same path as a bundled entry point file")
            else:
                clashes.append(f"  {what} {f.path} would land inside the bundled entry point's {top}/")
    if clashes:
        raise BundleError(
            "code.source_dir clashes with files smtrain bundles to start the job:\n"
            + "\n".join(clashes)
            + "\nRename them, or list them in .smtrainignore."
        )

    planned = sorted(entry_files + source_files, key=lambda p: sort_key(p.path))
    try:
        data, files = write_archive(planned, max_size)
    except TooLarge as stop:
        assert max_size is not None
        raise _size_error(stop.compressed, False, max_size, planned) from None
    if max_size is not None and len(data) > max_size:
        raise _size_error(len(data), True, max_size, planned)
    return Bundle(
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        files=files,
        skipped=tuple(sorted(skipped, key=sort_key)),
    )


def s3_key_for(output_uri: str, bundle: Bundle) -> str:
    """Full S3 URI of the bundle: ``<output>/source/<sha256>/sourcedir.tar.gz``.

    The digest in the key lets identical code be uploaded once and reused across jobs.
    """
    if not output_uri.startswith("s3://") or not output_uri[5:].strip("/"):
        raise BundleError(f"output must be an s3:// URI with a bucket, got {output_uri!r}")
    return f"{output_uri.rstrip('/')}/source/{bundle.sha256}/{ARCHIVE_NAME}"
