"""Known secret values found inside free text, in one pass over the text however many values there are.

Which values are searched for (smtrain.redact documents the rule for users):

- a value needs at least MIN_ALNUM letters or digits: shorter ones ("true", "s3://", "1") would mask
  ordinary text all over the output (the value itself is still masked where the data names it secret);
- a value shorter than ANYWHERE characters counts only as a whole token, with no letter or digit
  touching it on either side: a secret `abc123` is masked in `pw=abc123`, not in `subnet-0abc123def`;
- a longer value is masked wherever it occurs: a credential glued to other text is still a leak, and
  16 characters do not turn up by chance.

How: the values sorted, and the set of their first MIN_ALNUM characters ("anchors"). A scan looks the
next MIN_ALNUM characters of each position of the text up in that set (constant time); only at a hit
does it search the sorted values, by binary search that jumps by common prefixes. Masking a text
costs O(len(text)), plus O(log n) per hit; building costs O(n log n), once, for n values. (The
quadratic alternative, one substring replacement per value, took a minute for 100,000 values.)
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable

MIN_ALNUM = 6
ANYWHERE = 16
_SEARCHABLE = re.compile(rf"(?:[\W_]*[^\W_]){{{MIN_ALNUM}}}")


def searchable(value: str) -> bool:
    """Whether `value` is long and distinctive enough to be searched for in free text."""
    return _SEARCHABLE.match(value) is not None


def _whole_token(text: str, start: int, end: int) -> bool:
    """No letter or digit runs on into the match (only asked of values shorter than ANYWHERE)."""
    if start > 0 and text[start].isalnum() and text[start - 1].isalnum():
        return False
    return not (end < len(text) and text[end - 1].isalnum() and text[end].isalnum())


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _Index:
    """An immutable search structure over a set of values (see the module's docstring)."""

    def __init__(self, values: Iterable[str]) -> None:
        self.sorted = sorted(values)
        self.anchors = frozenset(v[:MIN_ALNUM] for v in self.sorted)
        self.longest = max(map(len, self.sorted), default=0)

    def spans(self, text: str) -> list[tuple[int, int]]:
        anchors = self.anchors
        if not anchors or len(text) < MIN_ALNUM:
            return []
        found = []
        for i in range(len(text) - MIN_ALNUM + 1):
            if text[i:i + MIN_ALNUM] in anchors:
                end = self._match_at(text, i)
                if end:
                    found.append((i, end))
        return found

    def _match_at(self, text: str, start: int) -> int | None:
        """The end of the longest value that starts at `start` and may be masked there, if any.

        Every value that is a prefix of `t` sorts at or before `t`, and the nearest one before `t`
        is the longest; a value in between that is not a prefix shares at most its common prefix
        with `t`, so the search continues from that shorter prefix.
        """
        values = self.sorted
        t = text[start:start + self.longest]
        hi = len(values)
        while len(t) >= MIN_ALNUM:
            j = bisect.bisect_right(values, t, 0, hi)
            if j == 0:
                return None
            value = values[j - 1]
            if t.startswith(value):
                end = start + len(value)
                if len(value) >= ANYWHERE or _whole_token(text, start, end):
                    return end
                t = value[:-1]  # a shorter value may still stand as a whole token
            else:
                t = t[:_common_prefix(value, t)]
            hi = j - 1
        return None


class KnownValues:
    """A growing set of secret values; `spans` finds them in a text."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._index: _Index | None = None

    def __len__(self) -> int:
        return len(self._values)

    def add(self, value: str) -> None:
        """Remember `value` if it is searchable (else only structure can mask it)."""
        if value not in self._values and searchable(value):
            self._values.add(value)
            self._index = None  # rebuilt on the next search: adding many values stays linear

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every place where a known value stands in `text` (they may overlap)."""
        index = self._index
        if index is None:
            index = self._index = _Index(self._values)
        return index.spans(text)
