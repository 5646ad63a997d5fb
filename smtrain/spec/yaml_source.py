"""YAML text -> plain data, remembering where every value came from.

PyYAML's constructors forget positions, silently keep the last of two duplicate keys, and
follow aliases without limit, so the node graph is walked here instead: each value's line and
column are recorded under its field path, duplicates are refused, and ${VAR} /
${VAR:-default} are expanded in scalars before a plain one's type is resolved (so
`nodes: ${NODES}` gives an int).

A job spec is small, so what one may expand to is capped (MAX_DEPTH, MAX_VALUES, MAX_TEXT):
an alias "billion laughs", a self-referencing alias or a deeply nested file is refused with
one line, before it costs time or memory. Only the standard tags are read (str, int, float,
bool, null, timestamp, map, seq), each checked against its text; any other tag is refused.
Problems in single values (an unset variable, a bad tag) are collected, not raised, so the
spec's other problems are reported with them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from smtrain.spec.problems import Location, Path_, Problem, SpecError, brief, location_in

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_DEPTH = 32  # nesting of mappings and lists; a spec needs 4
MAX_VALUES = 10_000  # nodes after aliases are followed; a spec has about 100
MAX_TEXT = 1_000_000  # characters of scalar text after aliases and ${VAR} are expanded

_STD = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP = (_STD + t for t in ("str", "int", "float", "bool", "null", "timestamp"))
_MAP, _SEQ, _MERGE = _STD + "map", _STD + "seq", _STD + "merge"
_SCALAR_TAGS = {_STR, _INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP}

# "$${" is a literal "${"; "${NAME}" or "${NAME:-default}" a variable; any other "${" a mistake.
_TOKEN = re.compile(r"\$\$\{|\$\{(?:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\})?")
# The same forms for JSON Schema: a string holding a variable may become any value.
INTERPOLATION_PATTERN = r"(?:^|[^$])\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}"
# What YAML 1.1 allows in a stream; PyYAML's reader refuses the rest without a line number.
_NOT_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")
# An underscore YAML 1.1 skips but a reader cannot place: not between two digits (0x_1, 1__0, 1_).
_STRAY_UNDERSCORE = re.compile(r"(?<![0-9a-fA-F])_|_(?![0-9a-fA-F])|^[-+]?0[xXbB]_")


def surprising_number(text: str) -> str | None:
    """Why YAML 1.1 reads `text` as another number than a person would, or None. PyYAML resolves
    `1:30` as base 60 (90), `012` as octal (10), and drops underscores anywhere (`0x_1` is 1)."""
    if ":" in text and _SEXAGESIMAL.match(text):
        return "base 60: each `:` multiplies what comes before by 60"
    if _OCTAL.match(text) and text.lstrip("+-").strip("0_"):
        return "octal: a leading 0 makes it base 8"
    if "_" in text and _STRAY_UNDERSCORE.search(text):
        return "the underscores are dropped wherever they stand"
    return None


class _Unreadable:
    """A value that could not be read; its problem is already recorded."""


UNREADABLE = _Unreadable()


class SourceMap:
    """Where each field path of a loaded document sits in its source."""

    def __init__(self, source: str, *, positions: bool = True) -> None:
        self.source = source
        # False for a spec given as a Python dict (smtrain.load): its problems are named by field path alone,
        # since the lines of the YAML it was read through are no one's.
        self.positions = positions
        self.keys: dict[Path_, tuple[int, int]] = {}
        self.values: dict[Path_, tuple[int, int]] = {}
        self.raw: dict[Path_, str] = {}  # the text of plain scalars, before typing
        self.overridden: dict[Path_, str] = {}  # paths set by an override: where, as a problem names it ("--set a=b")
        self.unreadable: set[Path_] = set()  # values left out because of a problem already reported
        # Numbers YAML 1.1 reads as another than a person would (`1:30` is 90): the message, for the fields
        # that take the number (a field taken as written keeps the text, and is fine).
        self.surprises: dict[Path_, str] = {}

    def locate(self, path: Path_, *, at_key: bool = False) -> Location | None:
        """The closest recorded position for `path`, walking up to its parents (None: a spec without positions)."""
        table = self.keys if at_key else self.values
        probe = tuple(path)
        for set_path, text in self.overridden.items():
            if probe[: len(set_path)] == set_path:
                return Location(text)
        if not self.positions:
            return None
        while True:
            if probe in table:
                return Location(self.source, *table[probe])
            if probe in self.values:
                return Location(self.source, *self.values[probe])
            if not probe:
                return Location(self.source)
            probe = probe[:-1]

    def explained(self, path: Path_) -> bool:
        """Whether a problem at `path` follows from one already reported (an unreadable value)."""
        return any(tuple(path[: len(bad)]) == bad for bad in self.unreadable)


def _mark(node: yaml.Node | yaml.Event) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _short(tag: str) -> str:
    return "!!" + tag[len(_STD):] if tag.startswith(_STD) else tag


class _Walker:
    def __init__(self, loader: Any, smap: SourceMap, env: Mapping[str, str]) -> None:
        self.loader = loader
        self.smap = smap
        self.env = env
        self.problems: list[Problem] = []
        self.values = 0
        self.text = 0
        self.open: set[int] = set()  # collections being walked: an alias to one of them is a cycle

    def problem(self, path: Path_, message: str, node: yaml.Node, *, drops_value: bool = True) -> _Unreadable:
        """Record a problem at `node`; a value that cannot be read is left out (and so is any other
        problem at its path: "required field is missing" would only repeat it)."""
        where = Location(self.smap.source, *_mark(node)) if self.smap.positions else None  # a mapping: its path
        self.problems.append(Problem(path, message, where))
        if drops_value:
            self.smap.unreadable.add(path)
        return UNREADABLE

    def too_big(self, node: yaml.Node, what: str) -> SpecError:
        where = Location(self.smap.source, *_mark(node))
        return SpecError([Problem((), f"the spec expands to {what} (through aliases?): a job spec is far "
                                      "smaller; refusing to read it", where)])

    def walk(self, node: yaml.Node, path: Path_, depth: int = 1) -> Any:
        self.values += 1
        if self.values > MAX_VALUES:
            raise self.too_big(node, f"more than {MAX_VALUES} values")
        self.smap.values.setdefault(path, _mark(node))
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if depth > MAX_DEPTH:
            raise self.too_big(node, f"more than {MAX_DEPTH} levels of nesting")
        if id(node) in self.open:
            return self.problem(path, "this alias refers to a mapping or list that contains it", node)
        if node.tag not in (_MAP, _SEQ):
            return self.problem(path, f"unknown YAML tag {_short(node.tag)}: a job spec holds plain values, "
                                      "lists and mappings", node)
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path, depth)
            return [self.walk(child, path + (i,), depth + 1) for i, child in enumerate(node.value)]
        finally:
            self.open.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, path: Path_, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_seen: dict[str, int] = {}
        merges: list[yaml.Node] = []
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _MERGE:
                merges.append(value_node)
                continue
            key = self._key(key_node, path)
            if key is None:
                continue
            child = path + (key,)
            if key in first_seen:
                self.problem(child, f"duplicate key {brief(key)} (first given on line {first_seen[key]})", key_node,
                             drops_value=False)
                continue
            first_seen[key] = _mark(key_node)[0]
            self.smap.keys.setdefault(child, _mark(key_node))
            value = self.walk(value_node, child, depth + 1)
            if value is not UNREADABLE:
                result[key] = value
        # `<<: *base` (or a list of them): keys written here win, then earlier merged mappings.
        for merged in self._merged(merges, path, depth):
            for key, value in merged.items():
                result.setdefault(key, value)
        return result

    def _merged(self, merges: list[yaml.Node], path: Path_, depth: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for value_node in merges:
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    self.problem(path, "a merge key (<<) takes a mapping or a list of mappings", source,
                                 drops_value=False)
                    continue
                merged = self.walk(source, path, depth)
                if isinstance(merged, dict):
                    out.append(merged)
        return out

    def _key(self, node: yaml.Node, path: Path_) -> str | None:
        """A mapping key is a name: its text as written, whatever type YAML would give it."""
        if not isinstance(node, yaml.ScalarNode):
            kind = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
            self.problem(path, f"keys must be plain names, not {kind}", node, drops_value=False)
            return None
        if node.tag not in (_STR, self._implicit(node)):
            self.problem(path, f"keys must be plain names, not tagged {_short(node.tag)}", node, drops_value=False)
            return None
        key = self._expand(node.value, path + (node.value,), node)
        return key if isinstance(key, str) else None

    def _implicit(self, node: yaml.ScalarNode) -> str:
        """The tag YAML gives this scalar's text when no tag is written."""
        if node.style:  # quoted or block text ("" from the C loader means plain)
            return _STR
        return self.loader.resolve(yaml.ScalarNode, node.value, (True, False))

    def _scalar(self, node: yaml.ScalarNode, path: Path_) -> Any:
        text, tag = node.value, node.tag
        explicit = tag != self._implicit(node)
        if explicit and tag not in _SCALAR_TAGS:
            return self.problem(path, f"unknown YAML tag {_short(tag)}: a job spec holds plain values, lists "
                                      "and mappings", node)
        if "${" in text:
            expanded = self._expand(text, path, node)
            if not isinstance(expanded, str):
                return expanded
            if expanded != text and not explicit and not node.style:
                tag = self.loader.resolve(yaml.ScalarNode, expanded, (True, False))  # as if written here
            text = expanded
        self.text += len(text)
        if self.text > MAX_TEXT:
            raise self.too_big(node, f"more than {MAX_TEXT // 1000}K characters of text")
        if explicit and not self._fits(tag, text):
            return self.problem(path, f"{brief(text)} is not a valid {_short(tag)}", node)
        if not node.style and not explicit:  # a tagged value is what its tag says, not its text
            self.smap.raw[path] = text
        if tag in (_STR, _TIMESTAMP):  # a date stays the text it was written as: no spec field is a date
            return text
        try:
            value = self.loader.construct_object(yaml.ScalarNode(tag, text, node.start_mark, node.end_mark))
        except (yaml.YAMLError, ValueError, OverflowError):  # e.g. an int of more than 4300 digits
            return self.problem(path, f"cannot read {brief(text)} as {_short(tag)}", node)
        surprise = surprising_number(text) if tag in (_INT, _FLOAT) and not explicit else None
        if surprise is not None:
            self.smap.surprises[path] = (f"{brief(text)} reads as {value!r} in YAML 1.1 ({surprise}); write the "
                                         "number as a person reads it, or quote it to keep the text")
        return value

    def _fits(self, tag: str, text: str) -> bool:
        """Whether `text` is a valid value of the explicit `tag` (`!!int ten` is not)."""
        if tag == _STR:
            return True
        as_written = self.loader.resolve(yaml.ScalarNode, text, (True, False))
        return as_written == tag or (tag == _FLOAT and as_written == _INT)

    def _expand(self, text: str, path: Path_, node: yaml.Node) -> str | _Unreadable:
        parts: list[str] = []
        end = 0
        failed = False
        for m in _TOKEN.finditer(text):
            parts.append(text[end:m.start()])
            end = m.end()
            name, default = m.group(1), m.group(2)
            if m.group(0) == "$${":
                parts.append("${")
            elif name is None:
                failed = True
                close = text.find("}", m.start())
                written = text[m.start():close + 1] if 0 < close - m.start() < 40 else text[m.start():m.start() + 8] + "..."
                self.problem(path, f"{written!r} is not a variable: write ${{NAME}} or ${{NAME:-default}} (NAME: letters, "
                                   "digits and _, not starting with a digit), or $${ for a literal ${", node)
            elif self.env.get(name):
                parts.append(self.env[name])
            elif default is not None:  # unset or empty, as a shell's ${NAME:-default}
                parts.append(default)
            elif name in self.env:
                parts.append("")
            else:
                failed = True
                self.problem(path, f"environment variable {name} is not set (write ${{{name}:-default}} "
                                   "to give a default)", node)
        if failed:
            return UNREADABLE
        parts.append(text[end:])
        return "".join(parts)


def _check_shape(loader: Any, source: str) -> None:
    """Read the event stream once before building nodes: refuse a file too deep, or one whose aliases
    would expand to too many values, at the event where it crosses the cap (a bomb costs its text only)."""
    depth = 0
    open_sizes: list[int] = []  # values so far in each open collection, itself included
    open_anchors: list[str | None] = []
    anchored: dict[str, int] = {}  # anchor -> the values its node expands to
    while loader.check_event():
        event = loader.get_event()
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise SpecError([Problem((), f"nested more than {MAX_DEPTH} levels deep: a job spec needs a few",
                                         Location(source, *_mark(event)))])
            open_sizes.append(1)
            open_anchors.append(event.anchor)
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            size, anchor = open_sizes.pop(), open_anchors.pop()
        elif isinstance(event, yaml.AliasEvent):
            size, anchor = anchored.get(event.anchor, 1), None
        elif isinstance(event, yaml.ScalarEvent):
            size, anchor = 1, event.anchor
        else:
            continue
        if anchor is not None:
            anchored[anchor] = size
        if open_sizes:
            open_sizes[-1] += size
        if max(size, open_sizes[-1] if open_sizes else 0) > MAX_VALUES:
            raise SpecError([Problem((), f"the spec expands to more than {MAX_VALUES} values (through aliases?): "
                                         "a job spec is far smaller; refusing to read it",
                                     Location(source, *_mark(event)))])


def _syntax_error(exc: yaml.YAMLError, text: str, source: str) -> SpecError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        where = Location(source, mark.line + 1, mark.column + 1)
    elif isinstance(getattr(exc, "position", None), int):  # a reader error: a character index
        where = location_in(source, text, min(exc.position, len(text)))
    else:
        where = Location(source, 1, 1)
    what = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
    return SpecError([Problem((), f"YAML syntax error: {what}", where)])


def load_yaml(text: str, source: str, env: Mapping[str, str], *,
              positions: bool = True) -> tuple[dict[str, Any], SourceMap, list[Problem]]:
    """Parse one YAML document into a mapping, with the problems of single values found on the way.

    Raise SpecError for a file that cannot be read as a spec at all: a syntax error, an empty file,
    a top level that is not a mapping, or one beyond the caps.
    """
    smap = SourceMap(source, positions=positions)
    bad = _NOT_PRINTABLE.search(text)
    if bad:
        raise SpecError([Problem((), f"character U+{ord(bad.group()):04X} (a control character) is not allowed in "
                                     'YAML; inside double quotes write it as an escape such as "\\t"',
                                 location_in(source, text, bad.start()))])
    try:
        scan = _Loader(text)
        try:
            _check_shape(scan, source)
        finally:
            scan.dispose()
        loader = _Loader(text)
        try:
            root = loader.get_single_node()
            if root is None or (isinstance(root, yaml.ScalarNode) and root.value.strip() in ("", "~", "null")):
                raise SpecError([Problem((), "the file is empty: a job spec needs at least name, role "
                                             "and output", Location(source))])
            if not isinstance(root, yaml.MappingNode):
                kind = "a list" if isinstance(root, yaml.SequenceNode) else "a single value"
                raise SpecError([Problem((), f"the top level must be a mapping (name: ..., role: ...), "
                                             f"not {kind}", Location(source, *_mark(root)))])
            walker = _Walker(loader, smap, env)
            data = walker.walk(root, ())
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, text, source) from None
    if not isinstance(data, dict):  # the root mapping itself carried a bad tag
        raise SpecError(walker.problems)
    return data, smap, _unique(walker.problems)


def _unique(problems: list[Problem]) -> list[Problem]:
    """One problem per place: a mapping merged or aliased twice reports its own problems once."""
    seen: set[tuple[Location | None, str]] = set()
    out = []
    for p in problems:
        if (p.location, p.message) not in seen:
            seen.add((p.location, p.message))
            out.append(p)
    return out
