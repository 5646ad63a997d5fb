"""Build the deterministic, content-addressed ``sourcedir.tar.gz`` a training job runs from.

SageMaker unpacks the archive into /opt/ml/code, pip-installs a ``requirements.txt`` found at
its root, then starts the entry point. The archive holds three things, all at its root:

* the bundled entry point (the files of ``entrypoint_dir``),
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

import fnmatch
import hashlib
import io
import os
import re
import stat
import struct
import tarfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

__all__ = [
    "BUNDLE_MTIME",
    "SECRET_PATTERNS",
    "Bundle",
    "BundleError",
    "BundleFile",
    "build_bundle",
    "s3_key_for",
]

# 1980-01-01T00:00:00Z: the usual reproducible-build epoch; some tools read 0 as "no time".
BUNDLE_MTIME = 315532800
COMPRESS_LEVEL = 6
ARCHIVE_NAME = "sourcedir.tar.gz"
REQUIREMENTS_NAME = "requirements.txt"
SMTRAINIGNORE = ".smtrainignore"

_ALWAYS_EXCLUDED_NAMES = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", SMTRAINIGNORE}
)
_VENV_DIR_NAMES = frozenset({".venv", "venv"})
_VENV_MARKERS = ("pyvenv.cfg", "conda-meta")
_BYTECODE_SUFFIXES = (".pyc", ".pyo")

# Matched, lower-cased, against each file's base name.
SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "credentials",
    "credentials.json",
    "client_secret*.json",
    ".netrc",
    "_netrc",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    ".pgpass",
    ".htpasswd",
    ".boto",
    ".dockercfg",
)
# Well-known templates and public keys: refusing them would only teach users to allow-list
# everything.
_SECRET_EXEMPT = (".env.example", ".env.sample", ".env.template", ".env.dist", "*.pub")
# Anything below a directory of this name is treated as a secret.
_SECRET_DIRS = frozenset({".aws", ".ssh", ".gnupg", ".kube"})

_Origin = str  # "entrypoint" | "source" | "requirements"


class BundleError(ValueError):
    """The code cannot be bundled; the message is meant for the user as is."""


@dataclass(frozen=True)
class BundleFile:
    """One regular file of the archive."""

    path: str  # archive path, POSIX
    size: int  # uncompressed bytes
    origin: str  # "entrypoint" | "source" | "requirements"


@dataclass(frozen=True)
class Bundle:
    """A built ``sourcedir.tar.gz``, held in memory."""

    data: bytes = field(repr=False)  # the .tar.gz bytes
    sha256: str  # hex digest of data
    files: tuple[BundleFile, ...]  # regular files, in archive order
    skipped: tuple[str, ...] = ()  # special files (sockets, FIFOs...) left out, archive paths

    @property
    def size(self) -> int:
        """Compressed size in bytes."""
        return len(self.data)

    @property
    def uncompressed_size(self) -> int:
        """Sum of the file sizes, before tar overhead and compression."""
        return sum(f.size for f in self.files)


# --------------------------------------------------------------------------- ignore rules

_Check = Callable[[str], "bool | None"]


def _read_spec(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise BundleError(f"cannot read ignore file {path}: {exc.strerror or exc}") from None
    spec = pathspec.GitIgnoreSpec.from_lines(text.lstrip("\ufeff").splitlines())
    return spec if spec.patterns else None


def _has_negation(spec: pathspec.GitIgnoreSpec) -> bool:
    return any(p.include is False for p in spec.patterns)


def _relative_check(spec: pathspec.GitIgnoreSpec, prefix: str) -> _Check:
    """Check paths below `prefix` (an archive dir ending in "/") against a nested ignore file."""
    cut = len(prefix)
    return lambda rel: spec.check_file(rel[cut:]).include


def _prefixed_check(spec: pathspec.GitIgnoreSpec, prefix: str) -> _Check:
    """Check paths of the source dir against an ignore file of an enclosing directory."""
    return lambda rel: spec.check_file(prefix + rel).include


@dataclass(frozen=True)
class _Rules:
    """The ignore files in force for one directory, strongest first."""

    checks: tuple[_Check, ...] = ()
    # Pruning a whole ignored directory is only safe when no pattern can bring a file back.
    negations: bool = False

    def ignored(self, rel: str) -> bool:
        for check in self.checks:
            verdict = check(rel)
            if verdict is not None:
                return verdict
        return False

    def with_nested(self, spec: pathspec.GitIgnoreSpec, prefix: str, after: int) -> _Rules:
        # A deeper .gitignore beats shallower ones, but never the .smtrainignore (index < after).
        checks = self.checks[:after] + (_relative_check(spec, prefix),) + self.checks[after:]
        return _Rules(checks, self.negations or _has_negation(spec))


def _enclosing_repo_checks(root: str) -> list[tuple[_Check, bool]]:
    """Checks from the .gitignore files between `root` and the root of its git work tree.

    Empty when `root` is not inside a git work tree, or is itself its root.
    """
    if os.path.lexists(os.path.join(root, ".git")):
        return []
    found: list[tuple[_Check, bool]] = []
    child = Path(root)
    for parent in child.parents:
        gitignore = parent / ".gitignore"
        if gitignore.is_file():
            spec = _read_spec(str(gitignore))
            if spec is not None:
                prefix = Path(root).relative_to(parent).as_posix() + "/"
                # An ignore file that excludes the source dir itself is not applied: the user
                # pointed at that directory on purpose.
                if spec.check_file(prefix).include is not True:
                    found.append((_prefixed_check(spec, prefix), _has_negation(spec)))
        if os.path.lexists(parent / ".git"):
            return found  # nearest first, as the ignore precedence wants
    return []


# --------------------------------------------------------------------------- secrets


def _one_regex(patterns: Sequence[str]) -> re.Pattern[str]:
    # One compiled alternation: checking thousands of names pattern by pattern is slow.
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


_SECRET_RE = _one_regex(SECRET_PATTERNS)
_SECRET_EXEMPT_RE = _one_regex(_SECRET_EXEMPT)


def _looks_secret(rel: str) -> bool:
    parts = rel.lower().split("/")
    if not _SECRET_DIRS.isdisjoint(parts[:-1]):
        return True
    name = parts[-1]
    return _SECRET_RE.match(name) is not None and _SECRET_EXEMPT_RE.match(name) is None


# --------------------------------------------------------------------------- tree walk


@dataclass
class _Planned:
    path: str  # archive path
    source: str  # file to read
    size: int  # from stat, used only to name large files when the size limit stops us
    executable: bool
    origin: _Origin


@dataclass
class _Walk:
    files: list[_Planned] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    secrets: list[tuple[str, str]] = field(default_factory=list)  # (archive path, as shown)


def _is_venv(path: str, name: str) -> bool:
    return name in _VENV_DIR_NAMES or any(os.path.lexists(os.path.join(path, m)) for m in _VENV_MARKERS)


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _walk_tree(
    root: Path,
    origin: _Origin,
    *,
    rules: _Rules | None,
    use_gitignore: bool,
    smtrainignore_count: int,
    check_secrets: bool,
) -> _Walk:
    """Collect the files of `root` in archive order, applying ignore rules and link checks."""
    root_real = os.path.realpath(root)
    out = _Walk()

    def visit(
        dir_path: str, prefix: str, rules: _Rules | None, ancestors: frozenset[str], dir_ignored: bool
    ) -> None:
        try:
            with os.scandir(dir_path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            out.problems.append(f"cannot list {prefix or './'}: {exc.strerror or exc}")
            return

        # Git does not read ignore files inside an excluded directory; neither do we.
        if rules is not None and use_gitignore and not dir_ignored:
            for entry in entries:
                if entry.name == ".gitignore" and entry.is_file():
                    # The root one was loaded with the other root rules, before the walk.
                    spec = _read_spec(entry.path) if prefix else None
                    if spec is not None:
                        rules = rules.with_nested(spec, prefix, smtrainignore_count)
                    break

        for entry in entries:
            name = entry.name
            rel = prefix + name
            if name in _ALWAYS_EXCLUDED_NAMES:
                continue
            is_link = entry.is_symlink()
            try:
                st = os.stat(entry.path)  # follows links; one stat, reused below
            except OSError:
                st = None  # broken link or link loop
            is_dir = st is not None and stat.S_ISDIR(st.st_mode)
            if is_dir and _is_venv(entry.path, name):
                continue
            if not is_dir and name.endswith(_BYTECODE_SUFFIXES):
                continue

            ignored = False
            if rules is not None:
                ignored = rules.ignored(rel + "/" if is_dir else rel)
                # An ignored directory is still walked when a negation could bring back a file
                # inside it; links are never followed for that.
                if ignored and (not is_dir or is_link or not rules.negations):
                    continue

            if is_link:
                target = os.readlink(entry.path)
                if st is None:
                    out.problems.append(f"{rel} is a broken symbolic link (to {target})")
                    continue
                real = os.path.realpath(entry.path)
                if not _inside(real, root_real):
                    out.problems.append(
                        f"{rel} is a symbolic link to {real}, outside {root}; "
                        "copy the file in or ignore the link"
                    )
                    continue
            assert st is not None

            if is_dir:
                real = os.path.realpath(entry.path)
                if real in ancestors:
                    out.problems.append(f"{rel} is a symbolic link to one of its own parent directories")
                    continue
                visit(entry.path, rel + "/", rules, ancestors | {real}, dir_ignored or ignored)
                continue
            if ignored:
                continue
            if not stat.S_ISREG(st.st_mode):
                out.skipped.append(rel)
                continue

            if check_secrets:
                target_rel = rel
                if is_link:
                    target_rel = Path(os.path.relpath(os.path.realpath(entry.path), root_real)).as_posix()
                if _looks_secret(rel) or _looks_secret(target_rel):
                    shown = rel if target_rel == rel else f"{rel} (link to {target_rel})"
                    out.secrets.append((rel, shown))
            out.files.append(_Planned(rel, entry.path, st.st_size, bool(st.st_mode & 0o111), origin))

    visit(str(root), "", rules, frozenset({root_real}), False)
    return out


def _source_rules(root: Path, use_gitignore: bool) -> tuple[_Rules, int]:
    """The ignore rules at the root of the source dir, and how many come from .smtrainignore."""
    checks: list[_Check] = []
    negations = False
    smt = root / SMTRAINIGNORE
    if smt.is_file():
        spec = _read_spec(str(smt))
        if spec is not None:
            checks.append(_relative_check(spec, ""))
            negations = _has_negation(spec)
    count = len(checks)
    if use_gitignore:
        gitignore = root / ".gitignore"
        if gitignore.is_file():
            spec = _read_spec(str(gitignore))
            if spec is not None:
                checks.append(_relative_check(spec, ""))
                negations = negations or _has_negation(spec)
        for check, neg in _enclosing_repo_checks(os.path.realpath(root)):
            checks.append(check)
            negations = negations or neg
    return _Rules(tuple(checks), negations), count


# --------------------------------------------------------------------------- archive writing


class _TooLarge(Exception):
    def __init__(self, compressed: int) -> None:
        super().__init__(compressed)
        self.compressed = compressed


class _TarGzWriter:
    """Writes tar entries straight into an in-memory gzip stream with a fixed header.

    Headers come from TarInfo.tobuf; the framing (512-byte blocks, two zero blocks, padding to
    a 10 KiB record) is what tarfile.TarFile writes, without its per-member bookkeeping.
    """

    _CHUNK = 1 << 20  # compress in large pieces: thousands of tiny calls cost more

    def __init__(self, stop_after: int | None) -> None:
        self._out = io.BytesIO()
        # Magic, deflate, no flags (so no file name), mtime 0, XFL 0, OS 255 ("unknown").
        self._out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
        self._deflate = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._pending = bytearray()
        self._crc = 0
        self._raw = 0
        self._stop_after = stop_after

    def add(self, info: tarfile.TarInfo, content: bytes = b"") -> None:
        self.add_header(info)
        self.add_data(content)
        self.end_member(len(content))

    def add_header(self, info: tarfile.TarInfo) -> None:
        self._pending += info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")

    def add_data(self, data: bytes) -> None:
        self._pending += data
        if len(self._pending) >= self._CHUNK:
            self._flush()

    def end_member(self, size: int) -> None:
        self._pending += bytes(-size % tarfile.BLOCKSIZE)

    def _flush(self) -> None:
        chunk = bytes(self._pending)
        self._pending.clear()
        self._crc = zlib.crc32(chunk, self._crc)
        self._raw += len(chunk)
        self._out.write(self._deflate.compress(chunk))
        if self._stop_after is not None and self._out.tell() > self._stop_after:
            raise _TooLarge(self._out.tell())

    def finish(self) -> bytes:
        self._pending += bytes(2 * tarfile.BLOCKSIZE)  # end-of-archive marker
        self._pending += bytes(-(self._raw + len(self._pending)) % tarfile.RECORDSIZE)
        self._flush()
        self._out.write(self._deflate.flush())
        self._out.write(struct.pack("<II", self._crc & 0xFFFFFFFF, self._raw & 0xFFFFFFFF))
        return self._out.getvalue()


def _tarinfo(
    name: str, *, size: int = 0, executable: bool = False, directory: bool = False
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.size = size
    info.mode = 0o755 if (directory or executable) else 0o644
    info.mtime = BUNDLE_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _sort_key(path: str) -> list[str]:
    # Component-wise, so a directory's contents stay together ("a/x" before "a-b").
    return path.split("/")


def _human(num_bytes: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.1f} {unit} ({num_bytes} bytes)"
    return f"{num_bytes} bytes"


def _write_archive(planned: list[_Planned], max_size: int | None) -> tuple[bytes, tuple[BundleFile, ...]]:
    # Keep compressing past the limit for a while, so the error can usually state the real
    # size, but stop long before an accidentally bundled dataset is read in full.
    stop_after = None if max_size is None else 4 * max_size + 2**20
    tar = _TarGzWriter(stop_after)
    files: list[BundleFile] = []
    written_dirs: set[str] = set()
    for item in planned:
        parts = item.path.split("/")
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth])
            if directory not in written_dirs:
                written_dirs.add(directory)
                tar.add(_tarinfo(directory, directory=True))
        try:
            size = _add_file(tar, item)
        except OSError as exc:
            raise BundleError(f"cannot read {item.source}: {exc.strerror or exc}") from None
        files.append(BundleFile(item.path, size, item.origin))
    return tar.finish(), tuple(files)


def _add_file(tar: _TarGzWriter, item: _Planned) -> int:
    """Add one file, reading it once; returns its size."""
    with open(item.source, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size <= _TarGzWriter._CHUNK:
            # Small file: the header gets the length actually read, so a file that changes
            # meanwhile still yields a valid archive.
            content = fh.read()
            tar.add(_tarinfo(item.path, size=len(content), executable=item.executable), content)
            return len(content)
        # Large file: stream it, so the size limit can stop us before it is all in memory.
        tar.add_header(_tarinfo(item.path, size=size, executable=item.executable))
        remaining = size
        while remaining:
            piece = fh.read(min(remaining, _TarGzWriter._CHUNK))
            if not piece:
                break
            tar.add_data(piece)
            remaining -= len(piece)
        if remaining or fh.read(1):
            raise BundleError(f"{item.source} changed while it was being bundled; try again")
        tar.end_member(size)
        return size


def _size_error(size: int, exact: bool, max_size: int, planned: list[_Planned]) -> BundleError:
    largest = sorted(planned, key=lambda p: (-p.size, p.path))[:5]
    listing = "\n".join(f"  {p.path}  {_human(p.size)}" for p in largest)
    amount = _human(size) if exact else f"more than {_human(size)}"
    return BundleError(
        f"the code bundle is {amount} compressed, over the limit of {_human(max_size)}.\n"
        f"Largest files:\n{listing}\n"
        "Leave data out of code.source_dir (list it in .smtrainignore) and read it from S3 instead."
    )


# --------------------------------------------------------------------------- public API


def _resolve_requirements(requirements: Path | str, source_dir: Path | None) -> Path:
    path = Path(requirements)
    if not path.is_absolute() and source_dir is not None:
        path = source_dir / path
    if not path.exists():
        raise BundleError(f"requirements file not found: {path}")
    if not path.is_file():
        raise BundleError(f"requirements file is not a regular file: {path}")
    return path


def build_bundle(
    entrypoint_dir: Path | None,
    source_dir: Path | None = None,
    requirements: Path | str | None = None,
    *,
    use_gitignore: bool = True,
    allow: Sequence[str] = (),
    max_size: int | None = None,
    exclude_entrypoint_files: Sequence[str] = (),
) -> Bundle:
    """Build the archive from the entry point dir, the user's source dir and requirements file.

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

    entry_files: list[_Planned] = []
    if entrypoint_dir is not None:
        entrypoint_dir = Path(entrypoint_dir)
        if not entrypoint_dir.is_dir():
            raise BundleError(f"entry point directory not found: {entrypoint_dir}")
        walk = _walk_tree(
            entrypoint_dir,
            "entrypoint",
            rules=None,
            use_gitignore=False,
            smtrainignore_count=0,
            check_secrets=False,
        )
        excluded = pathspec.GitIgnoreSpec.from_lines(list(exclude_entrypoint_files))
        entry_files = [f for f in walk.files if not excluded.match_file(f.path)]
        skipped += walk.skipped
        problems += walk.problems

    source_files: list[_Planned] = []
    secrets: list[tuple[str, str]] = []
    if source_dir is not None:
        source_dir = Path(source_dir)
        if not source_dir.exists():
            raise BundleError(f"code.source_dir not found: {source_dir}")
        if not source_dir.is_dir():
            raise BundleError(f"code.source_dir is not a directory: {source_dir}")
        rules, smt_count = _source_rules(source_dir, use_gitignore)
        walk = _walk_tree(
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
        source_files.append(_Planned(REQUIREMENTS_NAME, str(req_path), st.st_size, False, "requirements"))

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

    planned = sorted(entry_files + source_files, key=lambda p: _sort_key(p.path))
    try:
        data, files = _write_archive(planned, max_size)
    except _TooLarge as stop:
        assert max_size is not None
        raise _size_error(stop.compressed, False, max_size, planned) from None
    if max_size is not None and len(data) > max_size:
        raise _size_error(len(data), True, max_size, planned)
    return Bundle(
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        files=files,
        skipped=tuple(sorted(skipped, key=_sort_key)),
    )


def s3_key_for(output_uri: str, bundle: Bundle) -> str:
    """Full S3 URI of the bundle: ``<output>/source/<sha256>/sourcedir.tar.gz``.

    The digest in the key lets identical code be uploaded once and reused across jobs.
    """
    if not output_uri.startswith("s3://") or not output_uri[5:].strip("/"):
        raise BundleError(f"output must be an s3:// URI with a bucket, got {output_uri!r}")
    return f"{output_uri.rstrip('/')}/source/{bundle.sha256}/{ARCHIVE_NAME}"
