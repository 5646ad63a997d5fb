"""AWS's patterns are Java regular expressions: run them with Python's re, to the same verdict.

botocore's service models carry the patterns AWS checks with java.util.regex. Python's re lacks
some of Java's constructs and reads others differently, so a pattern is translated first:

- \\p{..} and \\P{..} (Unicode general categories, Java's POSIX classes, White_Space) become
  explicit sets of code points, built from unicodedata;
- every character class is parsed with Java's rules (nested classes are unions, && intersects)
  and written out as an explicit set;
- `.` stops at every Java line terminator; `$` and \\Z allow one final line terminator; \\z is the
  end of input; (?m) gives ^ and $ Java's terminators; \\h, \\v, \\R, \\e, \\cX, \\x{...}, \\Q..\\E,
  (?<name>..) and \\k<name> are spelled the Python way;
- \\w, \\d, \\s and \\b are ASCII-only in Java unless asked otherwise: compiled with re.ASCII, as
  is case-insensitive matching.

Explicit sets are built over the code points below a bound only (ASCII, the BMP, or all of
Unicode: the smallest that holds the text checked). The verdict is the same, and ASCII text never
pays for Unicode-wide sets (a scan of every code point takes about 0.4 s). Category data is that of
this Python's unicodedata, which may be a Unicode version other than AWS's Java.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

LIMITS = (0x80, 0x10000, 0x110000)  # the bounds sets are built over: ASCII, the BMP, all of Unicode
_LINE_TERMINATORS = "\n\r\x85\u2028\u2029"
_TERMINATOR_CLASS = "[\\n\\r\\x85\\u2028\\u2029]"
_NOT_BETWEEN_CR_LF = "(?!(?<=\\r)\\n)"  # Java never matches a line boundary inside \r\n
_HAS_POSSESSIVE = sys.version_info >= (3, 11)  # possessive quantifiers and atomic groups came in 3.11

# A Java quantifier: the greedy form, then lazy (?) or possessive (+).
_QUANTIFIER = re.compile(r"([*+?]|\{\d+(?:,\d*)?\})([?+]?)")

Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, inclusive code point ranges


class UnsupportedPattern(ValueError):
    """A construct this translation does not cover: the pattern is left unchecked, not misread."""


# --- sets of code points -------------------------------------------------------------------------

def _normal(ranges: list[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _union(a: Ranges, b: Ranges) -> Ranges:
    return _normal([*a, *b])


def _complement(a: Ranges, limit: int) -> Ranges:
    out, start = [], 0
    for lo, hi in a:
        if lo > start:
            out.append((start, lo - 1))
        start = max(start, hi + 1)
    if start < limit:
        out.append((start, limit - 1))
    return tuple(out)


def _intersection(a: Ranges, b: Ranges, limit: int) -> Ranges:
    return _complement(_union(_complement(a, limit), _complement(b, limit)), limit)


def _chars(text: str) -> Ranges:
    return _normal([(ord(c), ord(c)) for c in text])


def _clip(a: Ranges, limit: int) -> Ranges:
    return tuple((lo, min(hi, limit - 1)) for lo, hi in a if lo < limit)


@functools.lru_cache(maxsize=len(LIMITS))
def _categories(limit: int) -> dict[str, Ranges]:
    """General category (two letters) -> its code points below `limit`."""
    found: dict[str, list[tuple[int, int]]] = {}
    category = unicodedata.category
    start, current = 0, category("\0")
    for cp in range(1, limit):
        c = category(chr(cp))
        if c != current:
            found.setdefault(current, []).append((start, cp - 1))
            start, current = cp, c
    found.setdefault(current, []).append((start, limit - 1))
    return {name: _normal(ranges) for name, ranges in found.items()}


def _category(names: str, limit: int) -> Ranges:
    """Code points of the categories named: "L" is every L*, "Lu" one, "LC|Nd" a union."""
    table = _categories(limit)
    out: Ranges = ()
    for name in names.split("|"):
        for cat, ranges in table.items():
            if cat == name or (len(name) == 1 and cat[0] == name):
                out = _union(out, ranges)
    return out


_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
               "\u2028\u2029\u202f\u205f\u3000"
# Java's POSIX classes are US-ASCII only (java.util.regex.Pattern, without UNICODE_CHARACTER_CLASS).
_POSIX: dict[str, Ranges] = {
    "lower": ((0x61, 0x7A),), "upper": ((0x41, 0x5A),), "ascii": ((0, 0x7F),),
    "alpha": ((0x41, 0x5A), (0x61, 0x7A)), "digit": ((0x30, 0x39),),
    "alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)), "punct": _chars(_PUNCT),
    "graph": _union(((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)), _chars(_PUNCT)),
    "print": _union(((0x20, 0x39), (0x41, 0x5A), (0x61, 0x7A)), _chars(_PUNCT)),
    "blank": _chars(" \t"), "cntrl": ((0, 0x1F), (0x7F, 0x7F)),
    "xdigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)), "space": _chars(" \t\n\x0b\x0c\r"),
    "whitespace": _chars(_WHITE_SPACE),
    "l1": ((0, 0xFF),), "all": ((0, 0x10FFFF),),
}
# Unicode names Java accepts for general categories (with or without "Is"), and its own groupings.
_GENERAL = {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc", "Pd",
            "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf",
            "Cs", "Co", "Cn"}
_GROUPS = {"LC": "Lu|Ll|Lt", "LD": "L|Nd", "letter": "L", "digit": "Nd", "punctuation": "P", "control": "Cc"}
# Java's ASCII-only escapes (without UNICODE_CHARACTER_CLASS), and \h / \v (Java 8+).
_ESCAPE_SETS: dict[str, Ranges] = {
    "d": ((0x30, 0x39),), "w": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "s": _chars(" \t\n\x0b\x0c\r"), "v": _chars("\n\x0b\x0c\r\x85\u2028\u2029"),
    "h": _union(_chars(" \t\xa0\u1680\u180e\u202f\u205f\u3000"), ((0x2000, 0x200A),)),
}
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\a", "e": "\x1b"}


def _property(name: str, limit: int) -> Ranges:
    """The code points of \\p{name}."""
    if name.startswith(("gc=", "general_category=")):
        name = name.partition("=")[2]
    bare = name[2:] if name.startswith("Is") else name
    if bare in _GENERAL:
        return _category(bare, limit)
    if bare in _GROUPS:
        return _category(_GROUPS[bare], limit)
    key = re.sub(r"[\s_-]", "", bare).lower()
    if name in ("Lower", "Upper", "ASCII", "Alpha", "Digit", "Alnum", "Punct", "Graph", "Print", "Blank", "Cntrl",
                "XDigit", "Space", "L1", "all") or key == "whitespace":
        return _clip(_POSIX[key if key in _POSIX else name.lower()], limit)
    if key in _GROUPS:
        return _category(_GROUPS[key], limit)
    raise UnsupportedPattern(f"\\p{{{name}}} (scripts, blocks and other properties are not translated)")


def _class_text(ranges: Ranges) -> str:
    """A Python character class holding exactly `ranges` (a never-matching group when empty)."""
    if not ranges:
        return "(?!)"

    def char(cp: int) -> str:
        return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"

    return "[" + "".join(char(lo) if lo == hi else f"{char(lo)}-{char(hi)}" for lo, hi in ranges) + "]"


# --- the translation -----------------------------------------------------------------------------

class _Translator:
    """One pass over a Java pattern, writing the Python one; sets are built below `limit`."""

    def __init__(self, pattern: str, limit: int) -> None:
        self.p = pattern
        self.i = 0
        self.limit = limit
        self.out: list[str] = []
        # One scope per open group: the flags in force (i, s, m) and the flag groups opened inside it
        # by an inline (?i) that must close with it (Python takes global flags only at the start).
        self.scopes: list[dict] = [{"flags": set(), "closers": 0, "start": 0}]
        self.groups = 0  # capturing groups opened so far (Java reads \\12 by how many exist)
        self.atom_start = 0  # where in self.out the last atom begins, for a quantifier to wrap
        self.quantified = False  # the last token was a quantifier

    def fail(self, what: str) -> UnsupportedPattern:
        return UnsupportedPattern(f"{what} at offset {self.i} of {self.p!r}")

    @property
    def flags(self) -> set[str]:
        return self.scopes[-1]["flags"]

    def peek(self, n: int = 0) -> str:
        return self.p[self.i + n] if self.i + n < len(self.p) else ""

    def run(self) -> str:
        while self.i < len(self.p):
            self.token()
        self.out.append(")" * self.scopes[-1]["closers"])
        if len(self.scopes) != 1:
            raise self.fail("an unclosed group")
        return "".join(self.out)

    def token(self) -> None:
        c = self.p[self.i]
        quantifier = _QUANTIFIER.match(self.p, self.i)
        if quantifier:
            self.quantifier(quantifier)
            return
        self.quantified = False
        if c == "(":
            self.group()
            return
        if c == ")":
            self.i += 1
            scope = self.scopes.pop()
            if not self.scopes:
                raise self.fail("an unbalanced )")
            self.out.append(")" * scope["closers"] + ")")
            self.atom_start = scope["start"]
            return
        self.atom_start = len(self.out)
        if c == "\\":
            self.out.append(self.escape_outside())
        elif c == "[":
            self.out.append(_class_text(_clip(self.char_class(), self.limit)))
        elif c == ".":
            self.i += 1
            self.out.append("(?s:.)" if "s" in self.flags else f"[^{_TERMINATOR_CLASS[1:-1]}]")
        elif c == "$":
            self.i += 1
            if "m" in self.flags:
                self.out.append(f"(?=(?:{_TERMINATOR_CLASS})|\\Z){_NOT_BETWEEN_CR_LF}")
            else:
                self.out.append(f"(?=(?:\\r\\n|{_TERMINATOR_CLASS})?\\Z){_NOT_BETWEEN_CR_LF}")
        elif c == "^":
            self.i += 1
            self.out.append(f"(?:\\A|(?<={_TERMINATOR_CLASS})(?!\\Z){_NOT_BETWEEN_CR_LF})"
                            if "m" in self.flags else "\\A")
        else:
            self.i += 1
            self.out.append(c)

    def quantifier(self, m: re.Match[str]) -> None:
        self.i = m.end()
        if m.group(2) == "+" and not _HAS_POSSESSIVE:
            raise self.fail("a possessive quantifier (Python 3.11+)")
        if self.quantified:
            # Java takes X{2}{3} (a quantified atom quantified again); Python wants a group around it.
            self.out[self.atom_start:] = ["(?:" + "".join(self.out[self.atom_start:]) + ")"]
        self.out.append(m.group(0))
        self.quantified = True

    def group(self) -> None:
        self.i += 1
        flags = set(self.flags)
        start = len(self.out)
        if self.peek() != "?":
            self.groups += 1
            self.out.append("(")
        else:
            self.i += 1
            c = self.peek()
            if c in (":", "=", "!"):
                self.i += 1
                self.out.append("(?" + c)
            elif c == ">":
                if not _HAS_POSSESSIVE:
                    raise self.fail("an atomic group (Python 3.11+)")
                self.i += 1
                self.out.append("(?>")
            elif c == "<" and self.peek(1) in ("=", "!"):
                self.out.append("(?<" + self.peek(1))
                self.i += 2
            elif c == "<":
                end = self.p.index(">", self.i)
                self.groups += 1
                self.out.append(f"(?P<{self.p[self.i + 1:end]}>")
                self.i = end + 1
            else:
                m = re.compile(r"([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])").match(self.p, self.i)
                if not m:
                    raise self.fail("an unknown group construct")
                self.i = m.end()
                on, off = set(m.group(1)), set(m.group(2) or "")
                if (on | off) - set("ism"):
                    raise self.fail(f"inline flags {m.group(0)!r}")
                flags = (flags | on) - off
                case = "i" if "i" in on else ("-i" if "i" in off else "")
                if m.group(3) == ")":  # (?i) applies to the rest of the enclosing group
                    self.scopes[-1]["flags"] = flags
                    if case:
                        self.out.append(f"(?{case}:")
                        self.scopes[-1]["closers"] += 1
                    return
                self.out.append(f"(?{case}:")
        self.scopes.append({"flags": flags, "closers": 0, "start": start})

    def escape_outside(self) -> str:
        self.i += 1
        c = self.peek()
        if not c:
            raise self.fail("a trailing backslash")
        if c in "pP":
            ranges = self.property_escape()
            return _class_text(ranges)
        if c in "dwsDWSbBA":
            self.i += 1
            return "\\" + c
        if c in "hvHV":
            self.i += 1
            ranges = _clip(_ESCAPE_SETS[c.lower()], self.limit)
            return _class_text(ranges if c.islower() else _complement(ranges, self.limit))
        if c == "R":
            self.i += 1
            return "(?:\\r\\n|[\\n\\x0b\\x0c\\r\\x85\\u2028\\u2029])"
        if c == "z":
            self.i += 1
            return "\\Z"
        if c == "Z":
            self.i += 1
            return f"(?=(?:\\r\\n|{_TERMINATOR_CLASS})?\\Z)"
        if c == "Q":
            return "".join(re.escape(ch) for ch in self.quoted())
        if c == "k" and self.peek(1) == "<":
            end = self.p.index(">", self.i)
            name = self.p[self.i + 2:end]
            self.i = end + 1
            return f"(?P={name})"
        if c.isdigit() and c != "0":
            # Java: \\1-\\9 always refer back; more digits only while that many groups exist.
            number = int(c)
            self.i += 1
            while self.peek().isdigit() and number * 10 + int(self.peek()) <= self.groups:
                number = number * 10 + int(self.peek())
                self.i += 1
            return f"(?:\\{number})"
        return re.escape(chr(self.single_escape()))

    def quoted(self) -> str:
        """The literal text of \\Q...\\E (to the end of the pattern when \\E is missing)."""
        start = self.i + 1
        end = self.p.find("\\E", start)
        end = len(self.p) if end < 0 else end
        self.i = min(end + 2, len(self.p))
        return self.p[start:end]

    def property_escape(self) -> Ranges:
        negate = self.peek() == "P"
        self.i += 1
        if self.peek() == "{":
            end = self.p.index("}", self.i)
            name = self.p[self.i + 1:end]
            self.i = end + 1
        else:
            name = self.peek()
            self.i += 1
        ranges = _clip(_property(name, self.limit), self.limit)
        return _complement(ranges, self.limit) if negate else ranges

    def single_escape(self) -> int:
        """The code point of a one-character escape; self.i is just past the backslash."""
        c = self.peek()
        self.i += 1
        if c in _SIMPLE_ESCAPES:
            return ord(_SIMPLE_ESCAPES[c])
        if c == "0":
            m = re.compile(r"[0-3][0-7]{0,2}|[0-7]{1,2}").match(self.p, self.i)
            if not m:
                raise self.fail("\\0 without octal digits")
            self.i = m.end()
            return int(m.group(0), 8)
        if c == "x":
            if self.peek() == "{":
                end = self.p.index("}", self.i)
                value = int(self.p[self.i + 1:end], 16)
                self.i = end + 1
                return value
            value = int(self.p[self.i:self.i + 2], 16)
            self.i += 2
            return value
        if c == "u":
            value = int(self.p[self.i:self.i + 4], 16)
            self.i += 4
            low = self.p[self.i + 2:self.i + 6] if self.p.startswith("\\u", self.i) else ""
            if 0xD800 <= value <= 0xDBFF and re.fullmatch(r"(?i)d[c-f][0-9a-f]{2}", low):
                # Java reads a UTF-16 surrogate pair written as two escapes as the one code point.
                self.i += 6
                return 0x10000 + ((value - 0xD800) << 10) + (int(low, 16) - 0xDC00)
            return value
        if c == "c":
            value = ord(self.peek()) ^ 64
            self.i += 1
            return value
        if c.isalnum():
            raise self.fail(f"the escape \\{c}")
        return ord(c)

    # Java character classes: [^...] negates; a nested [...] is a union; && intersects.
    def char_class(self) -> Ranges:
        self.i += 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        result: Ranges | None = None
        current: Ranges = ()
        first = True
        while True:
            c = self.peek()
            if not c:
                raise self.fail("an unclosed character class")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if self.p.startswith("&&", self.i):
                self.i += 2
                result = current if result is None else _intersection(result, current, self.limit)
                current = ()
                continue
            if c == "[":
                current = _union(current, _clip(self.char_class(), self.limit))
                continue
            atom = self.class_atom()
            if isinstance(atom, int):
                if self.peek() == "-" and self.peek(1) not in ("]", "[", ""):
                    self.i += 1
                    end = self.class_atom()
                    if not isinstance(end, int) or end < atom:
                        raise self.fail("a bad range in a character class")
                    atom_ranges: Ranges = ((atom, end),)
                else:
                    atom_ranges = ((atom, atom),)
                current = _union(current, _clip(atom_ranges, self.limit))
            else:
                current = _union(current, atom)
        if result is not None:
            current = _intersection(result, current, self.limit)
        return _complement(current, self.limit) if negate else current

    def class_atom(self) -> int | Ranges:
        """One member of a class: a code point, or a set (\\d, \\p{L}, \\Q..\\E...)."""
        c = self.peek()
        if c != "\\":
            self.i += 1
            return ord(c)
        self.i += 1
        e = self.peek()
        if e in ("p", "P"):
            return self.property_escape()
        if e and e.lower() in _ESCAPE_SETS:
            self.i += 1
            ranges = _clip(_ESCAPE_SETS[e.lower()], self.limit)
            return ranges if e.islower() else _complement(ranges, self.limit)
        if e == "Q":
            return _clip(_chars(self.quoted()), self.limit)
        return self.single_escape()


def translate(pattern: str, limit: int = LIMITS[-1]) -> str:
    """The Python form of Java `pattern`, its sets built below `limit`; UnsupportedPattern if it cannot be."""
    try:
        return _Translator(pattern, limit).run()
    except (IndexError, ValueError) as exc:  # a malformed escape, a missing } or >
        if isinstance(exc, UnsupportedPattern):
            raise
        raise UnsupportedPattern(f"cannot read {pattern!r}: {exc}") from None


@functools.lru_cache(maxsize=512)
def compiled(pattern: str, limit: int = LIMITS[-1]) -> re.Pattern[str] | None:
    """The translated pattern compiled (ASCII \\w, \\d, \\s, \\b and case as Java), or None if it cannot be."""
    try:
        return re.compile(translate(pattern, limit), re.ASCII)
    except (UnsupportedPattern, re.error):
        return None


def bound_for(text: str) -> int:
    """The smallest of LIMITS above every code point of `text`."""
    top = max(map(ord, text), default=0)
    return next(limit for limit in LIMITS if top < limit)


def fullmatch(pattern: str, text: str) -> bool | None:
    """Whether all of `text` matches Java `pattern` (AWS patterns are whole-string); None: untranslatable."""
    regex = compiled(pattern, bound_for(text))
    return None if regex is None else regex.fullmatch(text) is not None
