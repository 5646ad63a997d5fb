"""Problems found in a job spec, and where in which file they are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.redact import mask_text

Path_ = tuple[str | int, ...]


def dotted(path: Path_) -> str:
    """('inputs', 'train', 'uri') -> 'inputs.train.uri'; list indexes as [i], odd keys as ['..']."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not part or "." in part or not part.isprintable() or part != part.strip():
            out += f"[{brief(part, 80)}]"  # a key such as ".." or "x\n" would not read back from a dotted path
        elif len(part) > 80:  # a message names a 10 KB key, it does not print it
            out += ("." if out else "") + f"{part[:75]}...{part[-2:]}"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def brief(value: object, limit: int = 60) -> str:
    """repr(value), cut short: a message quotes what was written, not a 400-digit number in full."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-2:]}"


@dataclass(frozen=True)
class Location:
    source: str  # a file name, or the override that set the value ("--set a=b", "overrides['a'] = 'b'")
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.source
        return f"{self.source}:{self.line}:{self.column}"


def location_in(source: str, text: str, index: int) -> Location:
    """The 1-based line and column of character `index` of `text`, read from `source`."""
    line_start = text.rfind("\n", 0, index) + 1
    return Location(source, text.count("\n", 0, index) + 1, index - line_start + 1)


@dataclass(frozen=True)
class Problem:
    path: Path_
    message: str
    location: Location | None = None

    def render(self) -> str:
        """The problem as one line: `file:line:column: field.path: message`."""
        where = f"{self.location}: " if self.location else ""
        return f"{where}{dotted(self.path)}: {self.message}"


@dataclass(eq=False, repr=False)  # hashable as exceptions are, and UserError's masked repr
class SpecError(UserError):
    """One or more problems that make a spec unusable (exit code 2): `problems` as data, each with its place."""

    problems: list[Problem] = field(default_factory=list)
    code: ClassVar[int] = exit_codes.USAGE

    def __str__(self) -> str:
        return mask_text("\n".join(p.render() for p in self.problems))
