"""The walk over a tree: files in archive order, ignore rules applied, links checked, secrets noted.

smtrain's own directories (own_places.py: every marked one, and those the build names) are never walked.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from smtrain.bundle.ignore import SMTRAINIGNORE, Rules, read_ignore_file
from smtrain.bundle.model import Origin, PlannedFile
from smtrain.bundle.own_places import MARKER, is_marked
from smtrain.bundle.secret_guard import looks_secret

# .ipynb_checkpoints: Jupyter's copies of each notebook as last saved, outputs included (data, a key printed by
# mistake); they change on every save, so shipping them would change the bundle's sha256 for no code change.
_ALWAYS_EXCLUDED_NAMES = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".ipynb_checkpoints",
     SMTRAINIGNORE}
)
_VENV_DIR_NAMES = frozenset({".venv", "venv"})
_VENV_MARKERS = ("pyvenv.cfg", "conda-meta")
_BYTECODE_SUFFIXES = (".pyc", ".pyo")


@dataclass
class Walk:
    files: list[PlannedFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (archive path, what it is)
    problems: list[str] = field(default_factory=list)
    secrets: list[tuple[str, str]] = field(default_factory=list)  # (archive path, as shown)
    marked: list[str] = field(default_factory=list)  # directories left out by their marker alone


def special_kind(mode: int) -> str:
    """What a file that is neither a regular file nor a directory is, in a word or two."""
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def _is_venv(path: str, name: str) -> bool:
    return name in _VENV_DIR_NAMES or any(os.path.lexists(os.path.join(path, m)) for m in _VENV_MARKERS)


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def walk_tree(
    root: Path,
    origin: Origin,
    *,
    rules: Rules | None,
    use_gitignore: bool,
    smtrainignore_count: int,
    check_secrets: bool,
    prefix: str = "",
    leave_out: Collection[Path] = (),
) -> Walk:
    """Collect the files of `root` in archive order (their paths under `prefix`), applying ignore rules
    and link checks.

    Directories below `root` that are smtrain's own are left out: those holding own_places.MARKER,
    and those in `leave_out` (wherever a link leads to them from).
    """
    root_real = os.path.realpath(root)
    own = {os.path.realpath(p) for p in leave_out}
    out = Walk()

    def visit(
        dir_path: str, prefix: str, rules: Rules | None, ancestors: frozenset[str], dir_ignored: bool
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
                    spec = read_ignore_file(entry.path) if prefix else None
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
            if is_dir and os.path.realpath(entry.path) in own:
                continue  # the spec's local output or SMTRAIN_HOME: the next job must not carry the last one's
            if is_dir and is_marked(entry.path):
                if rules is None or not rules.ignored(rel + "/"):
                    out.marked.append(rel)  # an earlier run's output, or a marker copied in: said, in case it is code
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
                out.skipped.append((rel, special_kind(st.st_mode)))
                continue

            if check_secrets:
                target_rel = rel
                if is_link:
                    target_rel = Path(os.path.relpath(os.path.realpath(entry.path), root_real)).as_posix()
                if looks_secret(rel) or looks_secret(target_rel):
                    shown = rel if target_rel == rel else f"{rel} (link to {target_rel})"
                    out.secrets.append((rel, shown))
            out.files.append(PlannedFile(rel, entry.path, st.st_size, bool(st.st_mode & 0o111), origin))

    visit(str(root), prefix, rules, frozenset({root_real}), False)
    return out


def marked_warning(marked: list[str]) -> str | None:
    """A warning naming the directories left out as smtrain's own (they hold its marker), or None."""
    if not marked:
        return None
    # One line however many runs wrote there: the list would grow with each local run, and repeat on every command.
    shown = ", ".join(f"{rel}/" for rel in marked[:_MARKED_SHOWN])
    more = f" and {len(marked) - _MARKED_SHOWN} more" if len(marked) > _MARKED_SHOWN else ""
    what = "a folder" if len(marked) == 1 else f"{len(marked)} folders"
    return (f"left out of the code bundle: {what} that earlier local runs wrote ({shown}{more}; each holds {MARKER}; "
            f"if one is code, delete its {MARKER})")


_MARKED_SHOWN = 3


def skipped_warning(skipped: list[tuple[str, str]]) -> str | None:
    """A warning naming the special files the walk left out, or None."""
    if not skipped:
        return None
    listing = "\n".join(f"  {rel}  ({kind})" for rel, kind in skipped)
    one = len(skipped) == 1
    return (f"{'a special file' if one else f'{len(skipped)} special files'} (FIFO, socket or device) cannot be "
            f"archived and {'is' if one else 'are'} left out of the code bundle:\n{listing}\n"
            f"List {'it' if one else 'them'} in {SMTRAINIGNORE} to leave {'it' if one else 'them'} out without "
            "this warning.")
