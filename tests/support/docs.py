"""The documents the tests read: README.md, entrypoints/README.md and the pages of the docs site (docs/), and
a section of them found by its heading wherever it lives (a page may move; its heading names it)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import ROOT

PAGES: list[Path] = [ROOT / "README.md", ROOT / "entrypoints" / "README.md",
                     *sorted((ROOT / "docs").rglob("*.md"))]
_HEADING = re.compile(r"^(#{1,6}) (.+)$")


def headings(text: str) -> list[tuple[int, int, str]]:
    """(line index, level, title) of each Markdown heading outside fenced code (a `# comment` in a sh block is
    no heading)."""
    found, fence = [], False
    for index, line in enumerate(text.split("\n")):
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := _HEADING.match(line)):
            found.append((index, len(m.group(1)), m.group(2).strip()))
    return found


def section(title: str) -> str:
    """The text under the one heading named `title` in all the documents, up to the next heading of its level or
    above (its subsections included). A title found nowhere or twice fails: the test names it."""
    hits = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        lines = text.split("\n")
        marks = headings(text)
        for n, (index, level, name) in enumerate(marks):
            if name == title:
                end = next((i for i, lv, _ in marks[n + 1:] if lv <= level), len(lines))
                hits.append("\n".join(lines[index + 1:end]))
    assert len(hits) == 1, f"the docs have {len(hits)} sections named {title!r}"
    return hits[0]


def page_text(relative: str) -> str:
    """One page of the docs site, by its path under docs/."""
    return (ROOT / "docs" / relative).read_text(encoding="utf-8")
