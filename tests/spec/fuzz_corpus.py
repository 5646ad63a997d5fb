"""Mutated job specs for fuzzing: `fuzz_specs(n, seed)` yields (name, YAML text), the same ones for a seed.

Each spec starts from an example (configs/*.yaml, or a minimal spec) and gets one to three
mutations. Some change the data (a wrong type, an unknown or misspelt key, a missing field, a huge
or non-finite number, a trailing newline, unicode, a ${VAR} form, a plausible value of the right
kind), some the YAML itself (anchors and aliases, an alias inside what it names, merge keys, tags
standard and not, deep nesting, an alias "billion laughs", flow style). Now and then the text
itself is damaged (a control character, a cut, a stray indicator, CRLF lines, a byte that is not
UTF-8).

Write a text with encoding="utf-8", errors="surrogateescape": a lone surrogate U+DCxx in it stands
for the raw byte xx, so some specs are not valid UTF-8 on disk. FUZZ_ENV is the environment the
${VAR} forms expect (X set, EMPTY set but empty; UNSET never set).
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from tests.support import ROOT
from tests.support.specfiles import BASE

FUZZ_ENV = {"X": "3", "EMPTY": "", "DATA": "s3://my-bucket/data"}

SEEDS: list[dict[str, Any]] = [copy.deepcopy(BASE)] + [
    yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "configs").glob("*.yaml"))]


@dataclass
class Raw:
    """A scalar written exactly as `text` (plain): `.inf`, `0x1F`, `${X}`, `*a`, `!!int ten`."""

    text: str


@dataclass
class Anchored:
    name: str
    node: Any


@dataclass
class Tagged:
    tag: str
    node: Any


@dataclass
class Flow:
    """A mapping or list written in flow style ({a: 1} / [1, 2])."""

    node: Any


_PLAIN = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./:@+-]*")
_RESOLVER = yaml.resolver.Resolver()
_STR = "tag:yaml.org,2002:str"


def _scalar(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if _PLAIN.fullmatch(text) and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR:
        return text
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _key(key: Any) -> str:
    return _scalar(key) if not isinstance(key, str) or key != "<<" else "<<"


def _flow(node: Any) -> str:
    if isinstance(node, (Anchored, Tagged)):
        head = f"&{node.name}" if isinstance(node, Anchored) else node.tag
        return f"{head} {_flow(node.node)}"
    if isinstance(node, Flow):
        return _flow(node.node)
    if isinstance(node, dict):
        return "{" + ", ".join(f"{_key(k)}: {_flow(v)}" for k, v in node.items()) + "}"
    if isinstance(node, list):
        return "[" + ", ".join(_flow(v) for v in node) + "]"
    return _scalar(node)


def emit(node: Any, indent: int = 0) -> str:
    """Block-style YAML for a tree of dicts, lists, scalars and the wrappers above."""
    pad = "  " * indent
    if isinstance(node, dict) and node:
        lines = []
        for k, v in node.items():
            lines.append(f"{pad}{_key(k)}:{_after_key(v, indent)}")
        return "\n".join(lines)
    if isinstance(node, list) and node:
        return "\n".join(f"{pad}-{_after_key(v, indent)}" for v in node)
    return pad + _flow(node)


def _after_key(value: Any, indent: int) -> str:
    head = ""
    while isinstance(value, (Anchored, Tagged)):
        head += f" &{value.name}" if isinstance(value, Anchored) else f" {value.tag}"
        value = value.node
    if isinstance(value, (dict, list)) and value:
        return head + "\n" + emit(value, indent + 1)
    return f"{head} {_flow(value)}"


# --- values -----------------------------------------------------------------------------------------

_UNICODE = ["naïve", "日本語", "😀", "a\u200bb", "\u202eevil", "e\u0301", "x\u00a0y", "Ω", "\u2028", "ß"]
_VARS = ["${X}", "${X:-5}", "${UNSET}", "${UNSET:-7}", "${EMPTY:-d}", "${EMPTY}", "$${X}", "${X-y}", "${",
         "${1}", "pre-${X}-post", "${DATA:-s3://my-bucket/d}", "${UNSET:-}", "${X:-${Y}}"]
_HUGE = ["9" * 20, "9" * 400, "9" * 5000, "-" + "9" * 30, "1.0e+308", "1.7976931348623157e+308", "1.0e+999",
         ".inf", "-.inf", ".nan", "0x" + "F" * 40, "0o777", "1_000", "-0", "1:30", "0.0000001"]
_PLAUSIBLE = ["24GB", "24", "1.5GiB", "0GB", "100MB", "16TiB", "90m", "0", "0s", "29d", "28d", "6h", "1.5h",
              "auto", "none", "mirrored", "horovod", "smddp", "parameter_server", "multi_worker_mirrored",
              "ml.p4d.24xlarge", "ml.g5.xlarge", "ml.p5.48xlarge", "ml.t2.medium", "A100", "H100", "T4",
              "2.19", "2.10", "2.8", "2.21", "py310", "py312", "us-east-1", "eu-west-9", ".", "..", "train.v2",
              "s3://my-bucket/x", "s3://B_ad/x", "file:///tmp/x", "http://example.com/x", "./data",
              "123456789012.dkr.ecr.us-east-1.amazonaws.com/img:1.0", "a b", "img@sha256:" + "a" * 64,
              "arn:aws:iam::123456789012:role/R", "subnet-0abc1234", "sg-0abc1234", "on", "off", "yes",
              "File", "FastFile", "Pipe", "ShardedByS3Key", "sqrt", "cubic", "2024-01-01", "2024-13-45", "~"]
_TAGS = ["!!int", "!!str", "!!bool", "!!float", "!!null", "!!timestamp", "!!binary", "!!map", "!!seq",
         "!!python/object:os.system", "!!python/name:os.system", "!!set", "!!omap", "!custom", "!"]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(12 if depth < 2 else 9)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, 1, -1, 2, 7, 100, 101, 10**6, 2**53, 2**63])
    if kind == 3:
        return rng.choice([0.0, 0.5, 1e-3, -2.5, 1e300, 3.14])
    if kind == 4:
        return Raw(rng.choice(_HUGE))
    if kind == 5:
        return rng.choice(_UNICODE)
    if kind == 6:
        return Raw(rng.choice(_VARS))
    if kind in (7, 8):
        return rng.choice(_PLAUSIBLE)
    if kind in (9, 10):
        return {rng.choice(["a", "uri", "mode", "x y", "1"]): _random_value(rng, depth + 1)
                for _ in range(rng.randint(0, 2))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    return out


def _parent(tree: dict, path: tuple) -> Any:
    node = tree
    for part in path[:-1]:
        node = node[part]
    return node


# --- mutations --------------------------------------------------------------------------------------

def _replace(tree: dict, rng: random.Random, make: Any) -> None:
    paths = _paths(tree)
    if paths:
        path = rng.choice(paths)
        _parent(tree, path)[path[-1]] = make()


def m_wrong_type(tree: dict, rng: random.Random) -> None:
    _replace(tree, rng, lambda: _random_value(rng))


def m_plausible(tree: dict, rng: random.Random) -> None:
    _replace(tree, rng, lambda: rng.choice(_PLAUSIBLE))


def m_huge_number(tree: dict, rng: random.Random) -> None:
    _replace(tree, rng, lambda: Raw(rng.choice(_HUGE)))


def m_interpolation(tree: dict, rng: random.Random) -> None:
    _replace(tree, rng, lambda: Raw(rng.choice(_VARS)))


def m_unicode(tree: dict, rng: random.Random) -> None:
    _replace(tree, rng, lambda: rng.choice(_UNICODE) + rng.choice(["", "x", "\n"]))


def m_trailing_newline(tree: dict, rng: random.Random) -> None:
    paths = [p for p in _paths(tree) if isinstance(_parent(tree, p)[p[-1]], str)]
    if paths:
        path = rng.choice(paths)
        parent = _parent(tree, path)
        if rng.random() < 0.2:  # the key, not the value
            parent[path[-1] + "\n"] = parent.pop(path[-1])
        else:
            parent[path[-1]] += rng.choice(["\n", "\r\n", " ", "\t", "\x00", "\x1b"])


def m_unknown_key(tree: dict, rng: random.Random) -> None:
    sections = [tree] + [v for v in tree.values() if isinstance(v, dict)]
    section = rng.choice(sections)
    if section and rng.random() < 0.6:  # a typo of a key that exists
        key = rng.choice([k for k in section if isinstance(k, str)] or ["x"])
        i = rng.randrange(len(key) or 1)
        key = key[:i] + rng.choice("aeiouxz_") + key[i + 1:]
    else:
        key = rng.choice(["extra", "Name", "1", "true", "null", "", " ", "<<x", "a.b", "日本"])
    section[key] = _random_value(rng)


def m_delete(tree: dict, rng: random.Random) -> None:
    paths = _paths(tree)
    if paths:
        path = rng.choice(paths)
        del _parent(tree, path)[path[-1]]


def m_alias(tree: dict, rng: random.Random) -> None:
    """Anchor one node and refer to it from another place, sometimes from inside itself."""
    paths = _paths(tree)
    if len(paths) < 2:
        return
    source, target = rng.sample(paths, 2)
    alias_first = paths.index(target) < paths.index(source) or target[: len(source)] == source
    parent = _parent(tree, source)
    node = parent[source[-1]]
    if rng.random() < 0.3 and isinstance(node, dict):  # an alias inside what it names
        node = dict(node)
        node[rng.choice(["self", "x"])] = Raw("*a")
    elif rng.random() < 0.2 and isinstance(node, list):
        node = [*node, Raw("*a")]
    parent[source[-1]] = Anchored("a", node)
    if alias_first:  # an alias must come after its anchor in the text: give it a key of its own at the end
        tree["zz_alias"] = Raw("*a")
    else:
        _parent(tree, target)[target[-1]] = Raw("*a")


def m_merge(tree: dict, rng: random.Random) -> None:
    """A `<<:` merge of an anchored mapping (or a scalar, or a list of them) into a later mapping."""
    sections = [k for k, v in tree.items() if isinstance(v, dict)]
    if not sections:
        return
    first = rng.choice(sections)
    tree[first] = Anchored("m", tree[first])
    base = Raw("*m")
    choice = rng.random()
    if choice < 0.2:
        tree["zz_scalar"] = Anchored("s", rng.choice([1, "text", None]))
        base = Raw("*s")
    elif choice < 0.4:
        base = Flow([Raw("*m"), {"extra": 1}])
    later = {"<<": base}
    if rng.random() < 0.5:
        later.update({k: v for k, v in list(SEEDS[0].items())[:1]})
    tree[rng.choice(["zz_merge", "compute", "training", "hyperparameters", first])] = later


def m_tag(tree: dict, rng: random.Random) -> None:
    paths = _paths(tree)
    if paths:
        path = rng.choice(paths)
        parent = _parent(tree, path)
        parent[path[-1]] = Tagged(rng.choice(_TAGS), parent[path[-1]])


def m_bad_tag_content(tree: dict, rng: random.Random) -> None:
    _replace(tree, rng, lambda: Raw(rng.choice(["!!int ten", "!!bool linear", "!!float abc", "!!timestamp nope",
                                                "!!int 0x1F", "!!float 1", "!!null ~", "!!bool yes",
                                                "!!str 5", "!!int ''", "!!binary ****"])))


def m_deep(tree: dict, rng: random.Random) -> None:
    depth = rng.choice([5, 31, 33, 100, 600])
    open_, close = rng.choice([("[", "]"), ("{a: ", "}")])
    _replace(tree, rng, lambda: Raw(open_ * depth + "1" + close * depth))


def m_bomb(tree: dict, rng: random.Random) -> None:
    levels = rng.randint(2, 9)
    bomb: dict[str, Any] = {"l0": Anchored("l0", Flow(["lol"] * 9))}
    for i in range(1, levels):
        bomb[f"l{i}"] = Anchored(f"l{i}", Flow([Raw(f"*l{i - 1}")] * 9))
    tree[rng.choice(["hyperparameters", "zz_bomb", "environment"])] = bomb


def m_flow(tree: dict, rng: random.Random) -> None:
    sections = [k for k, v in tree.items() if isinstance(v, (dict, list))]
    if sections:
        key = rng.choice(sections)
        tree[key] = Flow(tree[key])


DATA_MUTATIONS = [m_wrong_type, m_plausible, m_plausible, m_huge_number, m_interpolation, m_unicode,
                  m_trailing_newline, m_unknown_key, m_delete]
YAML_MUTATIONS = [m_alias, m_merge, m_tag, m_bad_tag_content, m_deep, m_bomb, m_flow]


# --- damage to the text -----------------------------------------------------------------------------

def _damage(text: str, rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(["control", "cut", "stray", "crlf", "not_utf8", "bom", "tab"])
    at = rng.randint(0, len(text))
    if kind == "control":
        return text[:at] + rng.choice(["\x00", "\x01", "\x08", "\x1b", "\x7f", "\x85", "\ufffe", "\x0c"]) + text[at:], kind
    if kind == "cut":
        return text[:at], kind
    if kind == "stray":
        stray = rng.choice([":", "- ", "{", "]", "&", "*", "!", "%YAML 1.1\n---\n", "---\n", "? ", "|", ">", "'",
                            '"', "\n  - x\n", "\n name: dup\n", "<<: *x", "&a *a", "...\n", "#"])
        return text[:at] + stray + text[at:], kind
    if kind == "crlf":
        return text.replace("\n", "\r\n"), kind
    if kind == "not_utf8":
        return text[:at] + rng.choice(["\udcff", "\udcc3", "\udc80\udc80"]) + text[at:], kind
    if kind == "bom":
        return "\ufeff" + text, kind
    return text[:at] + "\t" + text[at:], kind


_SPECIAL = [("empty", ""), ("comment-only", "# nothing\n"), ("blank", "\n\n  \n"), ("null", "~\n"),
            ("list", "- a\n- b\n"), ("scalar", "just text\n"), ("two-docs", "name: a\n---\nname: b\n"),
            ("tagged-root", "!!python/object:os.system {name: x}\n"), ("self-alias", "a: &L [*L]\n"),
            ("merge-scalar", "x: &A 1\ncompute: {<<: *A}\n")]


def fuzz_specs(n: int, seed: int = 0) -> Iterator[tuple[str, str]]:
    """`n` specs, deterministic for `seed`: (a name saying what was done, the YAML text)."""
    rng = random.Random(seed)
    for i in range(n):
        if i < len(_SPECIAL):
            name, text = _SPECIAL[i]
            yield f"{i:05d}-{name}", text
            continue
        tree = copy.deepcopy(rng.choice(SEEDS))
        done = []
        for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
            mutate = rng.choice(DATA_MUTATIONS if rng.random() < 0.6 else YAML_MUTATIONS)
            mutate(tree, rng)
            done.append(mutate.__name__[2:])
        text = emit(tree) + "\n"
        if rng.random() < 0.12:
            text, kind = _damage(text, rng)
            done.append(kind)
        yield f"{i:05d}-{'+'.join(done) or 'example'}", text
