"""Which files of the source dir stay out: .smtrainignore, then .gitignore files (gitignore syntax).

Strongest first: the .smtrainignore at the root of the source dir; the .gitignore files inside it,
the deepest first; then those of the enclosing git work tree between the source dir and its root.
Global git excludes are never read, since they differ per machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pathspec

from smtrain.bundle.model import BundleError

SMTRAINIGNORE = ".smtrainignore"

Check = Callable[[str], "bool | None"]


def ignore_line(path: str) -> str:
    """The .smtrainignore line that leaves out exactly the file at archive path `path`.

    Anchored to the source dir's root, with gitignore's special characters escaped so that a
    name such as `run[1].log` means itself.
    """
    escaped = re.sub(r"[\\*?\[]", lambda m: "\\" + m.group(), path)
    kept = escaped.rstrip(" ")
    # Git drops trailing spaces unless each is escaped.
    return "/" + kept + "\\ " * (len(escaped) - len(kept))


def read_ignore_file(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise BundleError(f"cannot read ignore file {path}: {exc.strerror or exc}") from None
    spec = pathspec.GitIgnoreSpec.from_lines(text.lstrip("\ufeff").splitlines())
    return spec if spec.patterns else None


def has_negation(spec: pathspec.GitIgnoreSpec) -> bool:
    return any(p.include is False for p in spec.patterns)


def relative_check(spec: pathspec.GitIgnoreSpec, prefix: str) -> Check:
    """Check paths below `prefix` (an archive dir ending in "/") against a nested ignore file."""
    cut = len(prefix)
    return lambda rel: spec.check_file(rel[cut:]).include


def prefixed_check(spec: pathspec.GitIgnoreSpec, prefix: str) -> Check:
    """Check paths of the source dir against an ignore file of an enclosing directory."""
    return lambda rel: spec.check_file(prefix + rel).include


@dataclass(frozen=True)
class Rules:
    """The ignore files in force for one directory, strongest first."""

    checks: tuple[Check, ...] = ()
    # Pruning a whole ignored directory is only safe when no pattern can bring a file back.
    negations: bool = False

    def ignored(self, rel: str) -> bool:
        for check in self.checks:
            verdict = check(rel)
            if verdict is not None:
                return verdict
        return False

    def with_nested(self, spec: pathspec.GitIgnoreSpec, prefix: str, after: int) -> Rules:
        # A deeper .gitignore beats shallower ones, but never the .smtrainignore (index < after).
        checks = self.checks[:after] + (relative_check(spec, prefix),) + self.checks[after:]
        return Rules(checks, self.negations or has_negation(spec))


def enclosing_repo_checks(root: str) -> list[tuple[Check, bool]]:
    """Checks from the .gitignore files between `root` and the root of its git work tree.

    Empty when `root` is not inside a git work tree, or is itself its root.
    """
    if os.path.lexists(os.path.join(root, ".git")):
        return []
    found: list[tuple[Check, bool]] = []
    child = Path(root)
    for parent in child.parents:
        gitignore = parent / ".gitignore"
        if gitignore.is_file():
            spec = read_ignore_file(str(gitignore))
            if spec is not None:
                prefix = Path(root).relative_to(parent).as_posix() + "/"
                # An ignore file that excludes the source dir itself is not applied: the user
                # pointed at that directory on purpose.
                if spec.check_file(prefix).include is not True:
                    found.append((prefixed_check(spec, prefix), has_negation(spec)))
        if os.path.lexists(parent / ".git"):
            return found  # nearest first, as the ignore precedence wants
    return []


def source_rules(root: Path, use_gitignore: bool) -> tuple[Rules, int]:
    """The ignore rules at the root of the source dir, and how many come from .smtrainignore."""
    checks: list[Check] = []
    negations = False
    smt = root / SMTRAINIGNORE
    if smt.is_file():
        spec = read_ignore_file(str(smt))
        if spec is not None:
            checks.append(relative_check(spec, ""))
            negations = has_negation(spec)
    count = len(checks)
    if use_gitignore:
        gitignore = root / ".gitignore"
        if gitignore.is_file():
            spec = read_ignore_file(str(gitignore))
            if spec is not None:
                checks.append(relative_check(spec, ""))
                negations = negations or has_negation(spec)
        for check, neg in enclosing_repo_checks(os.path.realpath(root)):
            checks.append(check)
            negations = negations or neg
    return Rules(tuple(checks), negations), count
