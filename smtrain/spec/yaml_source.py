"""YAML text -> plain data, remembering where every value came from.

PyYAML's constructors forget positions and silently keep the last of two duplicate keys,
so the node graph is walked here instead: each value's line and column are recorded
under its field path, duplicates are refused, and ${VAR} / ${VAR:-default} are expanded
in plain scalars before their type is resolved (so `nodes: ${NODES}` gives an int).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from smtrain.spec.problems import Location, Path_, Problem, SpecError

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_VAR = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class SourceMap:
    """Where each field path of a loaded document sits in its source."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.keys: dict[Path_, tuple[int, int]] = {}
        self.values: dict[Path_, tuple[int, int]] = {}
        self.raw: dict[Path_, str] = {}  # the text of plain scalars, before typing
        self.overridden: dict[Path_, str] = {}  # paths set on the command line: the --set text

    def locate(self, path: Path_, *, at_key: bool = False) -> Location:
        """The closest recorded position for `path`, walking up to its parents."""
        table = self.keys if at_key else self.values
        probe = tuple(path)
        for set_path, text in self.overridden.items():
            if probe[: len(set_path)] == set_path:
                return Location(f"--set {text}")
        while True:
            if probe in table:
                return Location(self.source, *table[probe])
            if probe in self.values:
                return Location(self.source, *self.values[probe])
            if not probe:
                return Location(self.source)
            probe = probe[:-1]


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Walker:
    def __init__(self, loader: Any, smap: SourceMap, env: Mapping[str, str]) -> None:
        self.loader = loader
        self.smap = smap
        self.env = env
        self.problems: list[Problem] = []

    def problem(self, path: Path_, message: str, node: yaml.Node) -> None:
        self.problems.append(Problem(path, message, Location(self.smap.source, *_mark(node))))

    def walk(self, node: yaml.Node, path: Path_) -> Any:
        self.smap.values.setdefault(path, _mark(node))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.walk(child, path + (i,)) for i, child in enumerate(node.value)]
        return self._scalar(node, path)

    def _mapping(self, node: yaml.MappingNode, path: Path_) -> dict[str, Any]:
        self.loader.flatten_mapping(node)  # resolves `<<:` merge keys
        result: dict[str, Any] = {}
        first_seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = self._scalar(key_node, path, is_key=True) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                self.problem(path, f"keys must be plain names, not {key!r}", key_node)
                continue
            child = path + (key,)
            if key in first_seen:
                self.problem(child, f"duplicate key '{key}' (first given on line {first_seen[key]})", key_node)
                continue
            first_seen[key] = _mark(key_node)[0]
            self.smap.keys[child] = _mark(key_node)
            result[key] = self.walk(value_node, child)
        return result

    def _scalar(self, node: yaml.ScalarNode, path: Path_, is_key: bool = False) -> Any:
        text = node.value
        plain = not node.style  # the C loader says "" where the Python one says None
        if plain and "$" in text:
            expanded = self._expand(text, path, node)
            if expanded != text:
                # Re-resolve the type of the expanded text as if it had been written there.
                tag = self.loader.resolve(yaml.ScalarNode, expanded, (True, False))
                node = yaml.ScalarNode(tag, expanded, node.start_mark, node.end_mark)
                text = expanded
        elif "$" in text:
            return self._expand(text, path, node)  # quoted: stays a string
        if plain and not is_key:
            self.smap.raw[path] = text
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            self.problem(path, f"cannot read this value: {getattr(exc, 'problem', exc)}", node)
            return None

    def _expand(self, text: str, path: Path_, node: yaml.Node) -> str:
        def replace(m: re.Match[str]) -> str:
            if m.group(1):  # "$${X}" is an escaped, literal "${X}"
                return m.group(0)[1:]
            name, default = m.group(2), m.group(3)
            if name in self.env:
                return self.env[name]
            if default is not None:
                return default
            self.problem(path, f"environment variable {name} is not set (write ${{{name}:-default}} "
                               "to give a default)", node)
            return m.group(0)

        return _VAR.sub(replace, text)


def load_yaml(text: str, source: str, env: Mapping[str, str]) -> tuple[dict[str, Any], SourceMap]:
    """Parse one YAML document into a mapping; raise SpecError with every problem found."""
    smap = SourceMap(source)
    loader = _Loader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = Location(source, mark.line + 1, mark.column + 1) if mark else Location(source)
            what = exc.problem or str(exc)
            raise SpecError([Problem((), f"YAML syntax error: {what}", where)]) from None
        except yaml.YAMLError as exc:
            raise SpecError([Problem((), f"YAML error: {exc}", Location(source))]) from None
        if root is None or (isinstance(root, yaml.ScalarNode) and root.value.strip() in ("", "~", "null")):
            raise SpecError([Problem((), "the file is empty: a job spec needs at least name, role, "
                                         "tensorflow and output", Location(source))])
        if not isinstance(root, yaml.MappingNode):
            kind = "a list" if isinstance(root, yaml.SequenceNode) else "a single value"
            raise SpecError([Problem((), f"the top level must be a mapping (name: ..., role: ...), "
                                         f"not {kind}", Location(source, *_mark(root)))])
        walker = _Walker(loader, smap, env)
        data = walker.walk(root, ())
        if walker.problems:
            raise SpecError(walker.problems)
        return data, smap
    finally:
        loader.dispose()
