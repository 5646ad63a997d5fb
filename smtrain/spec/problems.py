"""Problems found in a job spec, and where in which file they are."""

from __future__ import annotations

from dataclasses import dataclass, field

Path_ = tuple[str | int, ...]


def dotted(path: Path_) -> str:
    """('inputs', 'train', 'uri') -> 'inputs.train.uri'; list indexes as [i]."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


@dataclass(frozen=True)
class Location:
    source: str  # a file name, or "--set" for command-line overrides
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.source
        return f"{self.source}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Problem:
    path: Path_
    message: str
    location: Location | None = None

    def render(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}{dotted(self.path)}: {self.message}"


@dataclass
class SpecError(Exception):
    """One or more problems that make a spec unusable (exit code 2)."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(p.render() for p in self.problems)
