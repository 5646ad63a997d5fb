"""A SageMaker job's TensorBoard event files: where SageMaker put them, and a copy of them here.

SageMaker uploads the container's TensorBoardOutputConfig.LocalPath (/opt/ml/output/tensorboard) to
<S3OutputPath>/<job>/tensorboard-output/ while the job runs. `smtrain tensorboard JOB` downloads the
event files (events.out.tfevents.*) under that prefix, nothing else, into a directory of this machine,
keeping the relative layout (train/, validation/), so that `tensorboard --logdir` reads it as the
program wrote it. Downloading again fetches only what changed: a writer appends to its event file, so
a file S3 holds at another size than the copy here is fetched again; one of the same size is left alone.

The directory is smtrain's own (the cache), an empty one, or one smtrain downloaded into before: a
record in it (MARKER) names the prefix and every file smtrain wrote there, with its size and time as
written. Any other directory is refused, and no file smtrain did not write is ever replaced: one that
is not in the record, or no longer as recorded (a copy of the user's put in its place), stays.

Only a key that names a file inside the directory is downloaded: one with `..`, `.`, empty segments, a
leading or trailing `/` or a backslash, or one that S3 holds both as a file and as a folder, is skipped
with a note.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.jobs import is_event_file
from smtrain.plan.job_places import tensorboard_files_uri
from smtrain.sagemaker.upload import split_s3_uri

CACHE_ENV = "XDG_CACHE_HOME"
_CHUNK = 1 << 20
# The name a file is downloaded under before it takes its own: no "tfevents" in it, so a TensorBoard
# already reading the directory never picks up half a file; random, and created exclusively, so that it
# is never a file of someone else's.
_PARTIAL = ".smtrain-download-{pid}-{token}"
MARKER = ".smtrain-tensorboard.json"  # smtrain's record in a directory it downloads into
_MARKER_KIND = "smtrain tensorboard download"
_EXAMPLES = 3  # keys or files a note names before "and N more"


def default_directory(job: str) -> Path:
    """$XDG_CACHE_HOME/smtrain/tensorboard/<job>, else ~/.cache/smtrain/tensorboard/<job>."""
    base = os.environ.get(CACHE_ENV, "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"  # the XDG spec ignores a relative one
    return root / "smtrain" / "tensorboard" / job


def event_files_uri(description: dict[str, Any]) -> str:
    """Where SageMaker keeps the event files of the job DescribeTrainingJob `description` answers for."""
    name = description["TrainingJobName"]
    s3_path = (description.get("TensorBoardOutputConfig") or {}).get("S3OutputPath")
    if not s3_path:
        raise UserError(f"training job {name} has no TensorBoardOutputConfig, so SageMaker keeps no TensorBoard "
                        "event files of it (its spec said `tensorboard: false`, or smtrain did not submit it)",
                        exit_codes.API)
    return tensorboard_files_uri(s3_path, name)


# A file as smtrain left it: (size, mtime in ns); None while it is being written, or for a file that an
# earlier smtrain left in its cache (it kept no record), either way smtrain's.
Stamp = tuple[int, int] | None


@dataclass(frozen=True)
class Place:
    """A directory that event files may be downloaded into, and what smtrain wrote there before."""

    path: Path
    source: str | None  # the S3 prefix downloaded here before; None: nothing yet
    written: dict[str, Stamp]  # the files smtrain wrote here (relative POSIX paths) as it left them


def claim(directory: Path, *, owned: bool) -> Place:
    """`directory` as a download place: missing, empty, holding smtrain's record, or (`owned`) smtrain's cache.

    Anything else is a UserError (exit 2) that says why and what to do; nothing is written here.
    """
    try:
        names = {entry.name for entry in os.scandir(directory)}
    except FileNotFoundError:
        return Place(directory, None, {})
    except OSError as exc:
        raise UserError(f"cannot download into {directory}: {exc.strerror or exc}", exit_codes.USAGE) from None
    if MARKER in names:
        return _read_marker(directory)
    if not names:
        return Place(directory, None, {})
    if owned:  # smtrain's cache from a version that kept no record: every file in it is smtrain's
        return Place(directory, None, {p.relative_to(directory).as_posix(): None for p in directory.rglob("*")
                                       if p.is_file() and not p.is_symlink()})
    example = sorted(names)[0]
    raise UserError(f"{directory} holds files smtrain did not download (e.g. {example!r}): smtrain downloads "
                    "event files only into a new or empty directory, or one it downloaded into before, and never "
                    "replaces a file it did not write; give a new or empty --dir, or leave --dir out to use "
                    "smtrain's cache", exit_codes.USAGE)


def _read_marker(directory: Path) -> Place:
    marker = directory / MARKER
    try:
        if not stat.S_ISREG(os.lstat(marker).st_mode):
            raise ValueError("not a plain file")
        data = json.loads(marker.read_text(encoding="utf-8"))
        files = data.get("files") if isinstance(data, dict) else None
        if not (isinstance(data, dict) and data.get("kind") == _MARKER_KIND and isinstance(data.get("source"), str)
                and isinstance(files, dict) and all(_is_stamp(v) for v in files.values())):
            raise ValueError("not the record smtrain writes")
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
        raise UserError(f"{marker} is not smtrain's download record ({why}), so smtrain cannot tell its files "
                        "from yours there: give a new or empty --dir", exit_codes.USAGE) from None
    return Place(directory, data["source"], {k: None if v is None else (v[0], v[1]) for k, v in files.items()})


def _is_stamp(value: Any) -> bool:
    return value is None or (isinstance(value, list) and len(value) == 2
                             and all(isinstance(n, int) and not isinstance(n, bool) for n in value))


def _stamp(path: Path) -> Stamp:
    """`path` as it is now, to compare with the record; None for anything but a plain file (links too)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def _smtrain_s(place: Place, relative: str) -> bool:
    """Whether the plain file at `relative` is the one smtrain wrote there (not one put in its place since)."""
    if relative not in place.written:
        return False
    recorded = place.written[relative]
    return recorded is None or recorded == _stamp(place.path.joinpath(*relative.split("/")))


def local_parts(rest: str) -> tuple[str, ...] | None:
    """The path below the download directory that the key part `rest` (what follows the prefix) names;
    None when it names no file inside it: `..` climbs out, a leading `/` looks absolute, a trailing `/`
    is a folder, `.` and empty segments make two keys one file, a backslash is a separator on Windows."""
    parts = tuple(rest.split("/"))
    if any(part in ("", ".", "..") or "\\" in part or "\0" in part for part in parts):
        return None
    return parts


def _in_the_way(place: Place, parts: tuple[str, ...]) -> bool:
    """Whether something here stops the event file at `parts` from being written: a file or link where a
    folder goes, or in its own place anything but the plain file smtrain wrote. Links are never followed."""
    path = place.path
    for depth, part in enumerate(parts, 1):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return False  # made from here on
        except OSError:
            return True
        if depth < len(parts) and not stat.S_ISDIR(mode):
            return True
    return not stat.S_ISREG(mode) or not _smtrain_s(place, "/".join(parts))


def _listing(s3: Any, bucket: str, prefix: str) -> list[tuple[str, int | None]]:
    return [(obj["Key"], obj.get("Size")) for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix) for obj in page.get("Contents", [])]


def _some(items: list[str]) -> str:
    """A few of `items`, quoted (names from S3 are shown escaped), and how many more."""
    shown = ", ".join(repr(i) for i in items[:_EXAMPLES])
    return shown + (f" and {len(items) - _EXAMPLES} more" if len(items) > _EXAMPLES else "")


def _create_exclusive(folder: Path) -> tuple[int, Path]:
    """A new, empty file in `folder` that was not there before (never someone else's): its descriptor and path."""
    while True:
        path = folder / _PARTIAL.format(pid=os.getpid(), token=secrets.token_hex(4))
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), path
        except FileExistsError:
            continue


def _write_whole(target: Path, chunks: Any) -> None:
    """`chunks` into `target`, whole or not at all (written under a new name of its own, then renamed)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = _create_exclusive(target.parent)
    except OSError as exc:
        raise UserError(f"cannot write {target}: {exc.strerror or exc}", exit_codes.USAGE) from None
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        os.replace(partial, target)
    except OSError as exc:
        raise UserError(f"cannot write {target}: {exc.strerror or exc}", exit_codes.USAGE) from None
    finally:
        partial.unlink(missing_ok=True)


def _record(place: Place, source: str, files: dict[str, Stamp]) -> None:
    stamps = {relative: None if stamp is None else list(stamp) for relative, stamp in sorted(files.items())}
    text = json.dumps({"kind": _MARKER_KIND, "source": source, "files": stamps}, indent=1) + "\n"
    _write_whole(place.path / MARKER, [text.encode("utf-8")])


def download(s3: Any, uri: str, place: Place) -> tuple[int, tuple[str, ...]]:
    """The event files under the S3 prefix `uri` into `place`, at the same relative path: how many it now
    holds of them, and a note for each kind of object left out.

    AWS errors propagate (the caller turns them into one line); a place that holds another prefix's
    files, or that cannot be written, is a UserError (exit 2).
    """
    if place.source is not None and place.source != uri:
        raise UserError(f"{place.path} holds the event files smtrain downloaded from {place.source}: give "
                        f"{uri} a directory of its own (another --dir), or delete {place.path}", exit_codes.USAGE)
    bucket, prefix = split_s3_uri(uri)
    others, unsafe, events = 0, [], []
    for key, size in _listing(s3, bucket, prefix):
        rest = key[len(prefix):]
        if not is_event_file(rest.rstrip("/").replace("\\", "/").rpartition("/")[2]):  # a\b: a Windows path
            others += not rest.endswith("/")  # a "folder" object is no one's data
            continue
        parts = local_parts(rest)
        if parts is None:
            unsafe.append(rest)
        else:
            events.append((key, parts, size))
    folders = {parts[:depth] for _, parts, _ in events for depth in range(1, len(parts))}
    clashing = ["/".join(parts) for _, parts, _ in events if parts in folders]
    kept, fetch, current = [], [], 0
    for key, parts, size in events:
        if parts in folders:
            continue
        target = place.path.joinpath(*parts)
        if _in_the_way(place, parts):
            kept.append("/".join(parts))
        elif target.is_file() and target.stat().st_size == size:
            current += 1  # this copy is current: event files only grow
        else:
            fetch.append((key, target))
    notes = []
    if others:
        what = "object under {} is not a TensorBoard event file" if others == 1 else \
            "objects under {} are not TensorBoard event files"
        notes.append(f"{others} {what.format(uri)} (events.out.tfevents.*): not downloaded")
    if unsafe:
        notes.append(f"skipped {_some(unsafe)} under {uri}: a key with '..', '.', an empty segment, a leading or "
                     f"trailing '/' or a backslash names no file inside {place.path}")
    if clashing:
        notes.append(f"skipped {_some(clashing)} under {uri}: S3 holds each as a file and as a folder at once")
    if kept:
        notes.append(f"not downloaded: {_some(kept)}, whose place in {place.path} holds something smtrain did not "
                     "write there (a file, a folder or a link), and smtrain never replaces it")
    if not fetch and not current:
        return 0, tuple(notes)
    # What is no longer smtrain's (gone, or the user's in its place) leaves the record; what is about to be
    # written joins it first, so that a download cut short leaves no file of smtrain's off the record.
    written = {f: s for f, s in place.written.items() if _stamp(place.path.joinpath(*f.split("/"))) is not None
               and _smtrain_s(place, f)}
    fetched = [target.relative_to(place.path).as_posix() for _, target in fetch]
    if fetch or place.source != uri or written != place.written or None in written.values():
        _record(place, uri, {**written, **dict.fromkeys(fetched)})
    for key, target in fetch:
        _write_whole(target, s3.get_object(Bucket=bucket, Key=key)["Body"].iter_chunks(_CHUNK))
    if fetch or None in written.values():
        _record(place, uri, {f: _stamp(place.path.joinpath(*f.split("/"))) for f in [*written, *fetched]})
    return current + len(fetch), tuple(notes)
