"""Build the deterministic, content-addressed ``sourcedir.tar.gz`` a training job runs from.

SageMaker unpacks the archive into /opt/ml/code, pip-installs a ``requirements.txt`` found at
its root, then starts the entry point. The archive holds three things, all at its root:

* the bundled entry point (``smtrain_entry.py``, ``smtrain_wrap.py`` and ``smtrain_tf/``, see
  entrypoint.py),
* the user's ``code.source_dir`` (for code.git, the checkout of its commit: smtrain.plan.git_source hands
  it over as the source dir, so it is bundled exactly the same way); a notebook entry point ships as the
  script made from it (smtrain.spec.notebook), not as the .ipynb,
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
* Sockets, FIFOs and device files cannot be archived; they are skipped, listed in
  ``Bundle.skipped`` and named in a warning.

Refusals and warnings come from plan_bundle(), before anything is packed, so that `validate`
and `plan` run the very checks of a build: secret-looking files, by name (secret_guard.py) or by
content (secret_content.py), unless code.allow_secrets lets them ship; bad links; clashes with
the entry point; a file over 1 GB, a total that cannot fit code.max_bundle_size (sizes.py). Warnings name skipped
special files and source files over 10 MB, with the .smtrainignore lines that leave them out.

Ignore rules (source dir only), strongest first:

1. always left out: ``.git``, ``.hg``, ``.svn``, ``__pycache__``, tool caches
   (``.pytest_cache``, ``.mypy_cache``, ``.ruff_cache``), Jupyter's ``.ipynb_checkpoints``, ``*.pyc``/``*.pyo``, virtual
   environments (a directory named ``.venv``/``venv`` or holding ``pyvenv.cfg`` or
   ``conda-meta``), ``.smtrainignore`` files, and smtrain's own outputs and records (own_places.py:
   a directory holding its marker, and those named in ``leave_out``: SMTRAIN_HOME and a local
   output, so that a local run's results never ship with the next job);
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
from collections.abc import Mapping, Sequence
from pathlib import Path

import pathspec

from smtrain.bundle.archive import TooLarge, sort_key, write_archive
from smtrain.bundle.ignore import SMTRAINIGNORE, source_rules
from smtrain.bundle.model import (
    ARCHIVE_NAME,
    REQUIREMENTS_NAME,
    Bundle,
    BundleError,
    PlannedBundle,
    PlannedFile,
)
from smtrain.bundle.secret_content import content_head, read_head, secret_in
from smtrain.bundle.sizes import human, large_files_warning, refuse_hopeless, refuse_huge_files, size_error
from smtrain.bundle.walk import marked_warning, skipped_warning, walk_tree

_REQUIREMENTS_FIELD = ("code", "requirements")


def _resolve_requirements(requirements: Path | str, source_dir: Path | None) -> Path:
    """The requirements file the spec names; a symbolic link to it must not lead out of where it lies:
    out of code.source_dir for a file inside it, out of its own directory for a file named elsewhere
    (a link hidden by the ignore rules too: the spec names it, so it would ship)."""
    path = Path(requirements)
    if not path.is_absolute() and source_dir is not None:
        path = source_dir / path
    if os.path.islink(path) or any(os.path.islink(p) for p in path.parents if p != p.parent):
        real = os.path.realpath(path)
        within = os.path.realpath(source_dir) if source_dir is not None and _inside(
            os.path.abspath(path), os.path.abspath(source_dir)) else os.path.realpath(path.parent)
        if not _inside(real, within):
            raise BundleError(f"requirements file {path} is a symbolic link to {real}, outside {within}: a link "
                              "never takes a file from outside where it lies; copy the file in", _REQUIREMENTS_FIELD)
    if not path.exists():
        raise BundleError(f"requirements file not found: {path}", _REQUIREMENTS_FIELD)
    if not path.is_file():
        raise BundleError(f"requirements file is not a regular file: {path}", _REQUIREMENTS_FIELD)
    return path


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


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


def _refuse_secrets(
    named: list[tuple[str, str]], files: list[PlannedFile], allow: Sequence[str], problems: list[str]
) -> None:
    """Refuse source files that look like secrets by name or hold one, unless `allow` lets them ship.

    Each remaining file's head is read once; one that cannot be read becomes a problem now rather
    than when it is archived.
    """
    allowed = pathspec.GitIgnoreSpec.from_lines(list(allow))
    by_name = dict(named)
    refused = []
    for f in files:
        if allowed.match_file(f.path):
            continue
        if f.path in by_name:
            refused.append(by_name[f.path])
            continue
        try:
            head = read_head(f.source, f.size) if f.content is None else content_head(f.content)
        except OSError as exc:
            problems.append(f"cannot read {f.path}: {exc.strerror or exc}")
            continue
        found = secret_in(head) if head is not None else None
        if found:
            refused.append(f"{f.path} ({found})")
    if refused:
        raise BundleError(
            "refusing to upload files that look like secrets:\n"
            + "\n".join(f"  {s}" for s in refused)
            + "\nIf they are meant to ship with the code, add their paths to code.allow_secrets; "
            f"otherwise list them in {SMTRAINIGNORE}."
        )


def _made_files(files: list[PlannedFile], made: Mapping[str, tuple[str, bytes]]) -> list[PlannedFile]:
    """The walked source files with each one of `made` replaced by the file made from it (plan_bundle)."""
    if not made:
        return files
    paths = {f.path for f in files}
    out = []
    for f in files:
        if f.path not in made:
            out.append(f)
            continue
        path, data = made[f.path]
        if path in paths:
            raise BundleError(f"code.source_dir has a file {path}, the name of the script smtrain makes from "
                              f"{f.path} for the job: rename or remove it, or leave it out in {SMTRAINIGNORE}",
                              ("code", "entry_point"))
        out.append(PlannedFile(path, f.source, len(data), False, f.origin, data))
    return out


def plan_bundle(
    entrypoint: Path | Sequence[Path] | None,
    source_dir: Path | None = None,
    requirements: Path | str | None = None,
    *,
    use_gitignore: bool = True,
    allow: Sequence[str] = (),
    max_size: int | None = None,
    exclude_entrypoint_files: Sequence[str] = (),
    leave_out: Sequence[Path] = (),
    made: Mapping[str, tuple[str, bytes]] | None = None,
    dependencies: Sequence[Path] = (),
) -> PlannedBundle:
    """Every file of the archive, with every refusal and warning, without packing anything.

    The arguments are build_bundle's, and `made`: source files (archive paths) that ship as a file smtrain
    made from them instead, {path: (archive path, bytes)}; a notebook entry point ships as its script, never
    as the .ipynb, whose outputs may hold data. `validate` and `plan` stop here; build_bundle goes on to
    write the archive. Raises BundleError with a message for the user on any problem.
    """
    if max_size is not None and max_size < 0:
        raise ValueError("max_size cannot be negative")
    if isinstance(allow, str) or isinstance(exclude_entrypoint_files, str):
        raise TypeError("allow and exclude_entrypoint_files take a sequence of patterns, not a string")

    skipped: list[tuple[str, str]] = []
    marked: list[str] = []
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
        marked += walk.marked
        problems += walk.problems
    excluded = pathspec.GitIgnoreSpec.from_lines(list(exclude_entrypoint_files))
    entry_files = [f for f in entry_files if not excluded.match_file(f.path)]

    source_files: list[PlannedFile] = []
    named_secrets: list[tuple[str, str]] = []
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
            leave_out=leave_out,
        )
        source_files = _made_files(walk.files, made or {})
        skipped += walk.skipped
        marked += walk.marked
        problems += walk.problems
        named_secrets = walk.secrets
    # code.dependencies (SDK v2's `dependencies`): each directory at the bundle's root under its own name, with
    # the same ignore rules (its own .gitignore and .smtrainignore) and secret checks as source_dir.
    tops = {f.path.split("/")[0] for f in source_files}
    for dependency in map(Path, dependencies):
        if not dependency.is_dir():
            raise BundleError(f"{dependency} is not a directory (SDK v2's dependencies are "
                              "directories, each shipped under its name)", ("code", "dependencies"))
        if dependency.name in tops:
            raise BundleError(f"{dependency.name}/ would land on source_dir's own "
                              f"{dependency.name}: rename one of them", ("code", "dependencies"))
        tops.add(dependency.name)
        dep_rules, dep_count = source_rules(dependency, use_gitignore)
        walk = walk_tree(dependency, "source", rules=dep_rules, use_gitignore=use_gitignore,
                         smtrainignore_count=dep_count, check_secrets=True, prefix=f"{dependency.name}/",
                         leave_out=leave_out)
        source_files += walk.files
        skipped += walk.skipped
        marked += walk.marked
        problems += walk.problems
        named_secrets = [*named_secrets, *walk.secrets]

    req_file: PlannedFile | None = None
    if requirements is not None:
        req_path = _resolve_requirements(requirements, source_dir)
        st = os.stat(req_path)
        req_file = PlannedFile(REQUIREMENTS_NAME, str(req_path), st.st_size, False, "requirements")
    if not problems:
        # Before any file is read (the secret checks read heads; packing reads all).
        refuse_huge_files(source_files + ([req_file] if req_file is not None else []), max_size)
        # Every file that ships gets the same secret checks, whatever route it takes into the bundle.
        checked = [f for f in source_files if req_file is None or f.path != REQUIREMENTS_NAME]
        _refuse_secrets(named_secrets, checked + ([req_file] if req_file is not None else []), allow, problems)

    if problems:
        raise BundleError("cannot bundle the code:\n" + "\n".join(f"  {p}" for p in problems))

    if requirements is not None:
        assert req_file is not None
        at_root = next((f for f in source_files if f.path == REQUIREMENTS_NAME), None)
        if at_root is not None:
            if not os.path.samefile(at_root.source, req_path):
                raise BundleError(
                    f"code.source_dir has its own {REQUIREMENTS_NAME} while code.requirements points "
                    f"to another file ({req_path}); remove one of them, or point code.requirements "
                    f"at {REQUIREMENTS_NAME}",
                    _REQUIREMENTS_FIELD,
                )
            source_files.remove(at_root)  # the same file: ship it once
        source_files.append(req_file)

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
    refuse_hopeless(planned, max_size)
    skipped.sort(key=lambda item: sort_key(item[0]))
    warnings = [w for w in (skipped_warning(skipped), marked_warning(marked), large_files_warning(planned)) if w]
    return PlannedBundle(tuple(planned), tuple(rel for rel, _ in skipped), tuple(warnings), max_size)


def write_bundle(planned: PlannedBundle) -> Bundle:
    """Pack a planned bundle into the archive, held to its size limit."""
    max_size = planned.max_size
    try:
        data, files = write_archive(list(planned.files), max_size)
    except TooLarge as stop:
        assert max_size is not None
        raise size_error(f"more than {human(stop.compressed)}", max_size, planned.files) from None
    if max_size is not None and len(data) > max_size:
        raise size_error(human(len(data)), max_size, planned.files)
    return Bundle(data=data, sha256=hashlib.sha256(data).hexdigest(), files=files, skipped=planned.skipped,
                  warnings=planned.warnings)


def build_bundle(
    entrypoint: Path | Sequence[Path] | None,
    source_dir: Path | None = None,
    requirements: Path | str | None = None,
    *,
    use_gitignore: bool = True,
    allow: Sequence[str] = (),
    max_size: int | None = None,
    exclude_entrypoint_files: Sequence[str] = (),
    leave_out: Sequence[Path] = (),
) -> Bundle:
    """Build the archive from the entry point, the user's source dir and requirements file.

    `entrypoint` is a directory whose contents go to the archive's root, or a list of files and
    directories that go there under their own names (the installed smtrain_entry.py, smtrain_wrap.py
    and smtrain_tf/).

    `requirements` is relative to `source_dir` when that is given (else to the working
    directory) unless absolute. `allow` holds gitignore-style patterns of archive paths that may
    ship although they look like secrets; `exclude_entrypoint_files` holds gitignore-style
    patterns of entry point files to leave out. `max_size` limits the compressed size in bytes.
    `leave_out` names directories of smtrain's own (SMTRAIN_HOME, a local output) that do not ship
    even when they lie inside `source_dir`.
    Raises BundleError with a message for the user on any problem; warnings are in Bundle.warnings.
    """
    return write_bundle(plan_bundle(entrypoint, source_dir, requirements, use_gitignore=use_gitignore, allow=allow,
                                    max_size=max_size, exclude_entrypoint_files=exclude_entrypoint_files,
                                    leave_out=leave_out))


def s3_key_for(output_uri: str, bundle: Bundle) -> str:
    """Full S3 URI of the bundle: ``<output>/source/<sha256>/sourcedir.tar.gz``.

    The digest in the key lets identical code be uploaded once and reused across jobs.
    """
    if not output_uri.startswith("s3://") or not output_uri[5:].strip("/"):
        raise BundleError(f"output must be an s3:// URI with a bucket, got {output_uri!r}")
    return f"{output_uri.rstrip('/')}/source/{bundle.sha256}/{ARCHIVE_NAME}"
