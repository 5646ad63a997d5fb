"""Keeping secret values out of everything smtrain prints, and out of the files it writes for people.

What counts as secret:

- names (:func:`looks_secret`): environment variables, hyperparameters and other keys such as
  DB_PASSWORD, API_TOKEN, aws_secret_access_key, apiKey or SIGNING_KEY;
- known values: those of secret-looking variables of this process (AWS credentials among them),
  read on first use, and those of secret-looking names in the spec, registered with
  :func:`remember` as soon as the spec is read; and, under any name, a value that is whole an AWS
  secret access key's shape (:func:`secret_shaped`); smtrain.redact.secret_values says which are searched for
  inside free text (at least 6 letters or digits; under 16 characters only as a whole token);
- value shapes, whatever the name: AWS access key ids (AKIA/ASIA) and the 40-character secret keys
  in the same text, private key blocks, the password of a URL, well-known token formats, bearer
  tokens, and the value in `name=value`, `--name value` or `"name": value` when the name looks secret.

Text is first made what a terminal shows (smtrain.terminal_text: escape sequences and controls
dropped, carriage returns drawn), so that what is masked is what a person would see.

Masking is structural: :func:`mask_data` changes only the string values of the data before it is
rendered (so JSON and YAML stay valid; a value under a secret-looking key becomes ``****`` whole),
:func:`mask_text` masks a finished message, traceback or log line, and :class:`StreamMasker` masks a
stream line by line, where a private key block spans lines.

    __init__.py       the masking itself (this module): looks_secret, remember, mask_data, mask_text, StreamMasker
    secret_values.py  the known secret values, found in text in one pass (the index mask_text searches with)

May import: the shared modules at smtrain's top (terminal_text), never a stage.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from smtrain.redact.secret_values import KnownValues
from smtrain.terminal_text import as_shown, shown_text

MASK = "****"

# Names. A word that is secret on its own (a substring would catch max_tokens and tokenizer for
# "token", author for "auth"); a few forms that are secret wherever they stand in a name (PGPASSWORD);
# and a name whose last word is "key".
_SECRET_IN_NAME = re.compile(r"pass(?:word|wd|phrase)|secret|credential|private_?key|api_?key|access_?key|"
                             r"token(?!s|iz|is)", re.IGNORECASE)
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_WORDS = frozenset({"pass", "pwd", "pw", "auth", "authorization", "cookie", "jwt", "apikey", "dsn"})
# Variables of this process whose names match but which hold no secret.
_NOT_SECRET_ENV = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})

_PEM_BEGIN_RE = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----"  # RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK
_PEM_END_RE = r"-----END[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----"
_PEM_BEGIN = re.compile(_PEM_BEGIN_RE)
_PEM_END = re.compile(_PEM_END_RE)

# Value shapes, one pass. Where a group is named, only that group is masked.
_SHAPES = re.compile("|".join((
    # A private key block; cut short (no END), everything after its header.
    rf"{_PEM_BEGIN_RE}(?:.*?{_PEM_END_RE}|.*)",
    r"(?<![A-Za-z0-9])(?P<akid>(?:AKIA|ASIA)[A-Z0-9]{16})(?![A-Za-z0-9])",
    # Tokens by their documented prefixes: GitHub, GitLab, Hugging Face, Slack, OpenAI/Anthropic,
    # Stripe, Google API keys, npm, PyPI; and JSON Web Tokens.
    r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_-]{20,}|"
    r"hf_[A-Za-z0-9]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{32,}|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|"
    r"AIza[A-Za-z0-9_-]{35}|npm_[A-Za-z0-9]{36}|pypi-AgE[A-Za-z0-9_-]{50,}|"
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@]*:(?P<urlpw>[^\s/?#@]+)@",
    r"(?:\b[Bb]earer|(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:basic|token))\s+(?P<bearer>[A-Za-z0-9._~+/-]{8,}=*)",
)), re.DOTALL)
# An AWS secret access key: 40 characters of base64 with both cases; masked where the same text holds
# an access key id (a lone 40-character token may as well be anything else).
_AWS_SECRET_KEY = re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])"
                             r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
# `--name value`, `--name=value`, `name=value` and `"name": value`: the name is asked of looks_secret.
_LABEL = re.compile(r"(?<![\w.-])(?:--?(?P<flag>[A-Za-z_][\w.-]*)(?:=|[ \t]+)"
                    r"|(?P<q>[\"'])(?P<quoted>[A-Za-z_][\w.-]*)(?P=q)[ \t]*[:=][ \t]*"
                    r"|(?P<name>[A-Za-z_][\w.-]*)=(?!=))")
# A quoted value runs to its closing quote, past quotes escaped inside it (JSON's "a\"b"): the whole value is
# masked, and the line stays what it was (valid JSON stays valid).
_LABELLED_VALUE = re.compile(r"\"(?P<dq>(?:[^\"\\\n]|\\.)*)\"|'(?P<sq>(?:[^'\\\n]|\\.)*)'|(?P<bare>[^\s\"',;&)}\]]+)")
_FLAG = re.compile(r"--?(?P<name>[A-Za-z_][\w.-]*)")

_known = KnownValues()
# The environment's items already read: a process (a Jupyter kernel, a CI job's steps) sets variables after
# its first output too, so each use reads what was added or changed since.
_environment_read: frozenset[tuple[str, str]] = frozenset()


@functools.lru_cache(maxsize=4096)  # log lines repeat the same few `name=value` labels
def looks_secret(name: str) -> bool:
    """Whether a variable, hyperparameter or key called `name` holds a secret."""
    if _SECRET_IN_NAME.search(name):
        return True
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    return bool(words) and (words[-1] == "key" or not _SECRET_WORDS.isdisjoint(words))


def _leaves(value: object) -> Iterable[str]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif value is not None:
        yield str(value)


def secret_shaped(value: str) -> bool:
    """Whether `value`, whole, has the shape of an AWS secret access key: 40 characters of base64 with
    both cases and a '/', a '+' or at least two digits (a random key has them; a git commit id, hex
    in one case, and a long CamelCase name do not), not starting with '/'."""
    value = value.strip()
    # An absolute path is a path (a working directory of 40 letters, digits and slashes would otherwise
    # hide every message that names a file under it); a key starts with "/" once in 64.
    return (not value.startswith("/") and _AWS_SECRET_KEY.fullmatch(value) is not None
            and ("/" in value or "+" in value or sum(c.isdigit() for c in value) >= 2))


def remember(values: object) -> None:
    """Register the values of secret-looking names in a mapping (a spec's environment or
    hyperparameters; nested mappings followed), and every value that has a secret's shape whatever
    its name, so that every later output masks them."""
    if not isinstance(values, Mapping):
        return
    for name, value in values.items():
        if isinstance(name, str) and looks_secret(name):
            for leaf in _leaves(value):
                _known.add(leaf)
        elif isinstance(value, Mapping):
            remember(value)
        else:
            for leaf in _leaves(value):
                if secret_shaped(leaf):
                    _known.add(leaf.strip())


def _known_values() -> KnownValues:
    global _environment_read
    environment = frozenset(os.environ.items())
    if environment != _environment_read:
        for name, value in environment - _environment_read:
            if name in _NOT_SECRET_ENV:
                continue
            if looks_secret(name):
                _known.add(value)
            elif secret_shaped(value):
                _known.add(value.strip())
        _environment_read = environment  # a value once known stays known: masking it later harms nothing
    return _known


def _forget() -> None:
    """Tests only: drop every known value; the process environment is read again on next use."""
    global _known, _environment_read
    _known, _environment_read = KnownValues(), frozenset()


def _shape_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    access_key_id = False
    for m in _SHAPES.finditer(text):
        group = next((g for g in ("urlpw", "bearer") if m.group(g) is not None), None)
        spans.append(m.span(group) if group else m.span())
        access_key_id = access_key_id or m.group("akid") is not None
    if access_key_id:
        spans += [m.span() for m in _AWS_SECRET_KEY.finditer(text)]
    return spans


def _label_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in _LABEL.finditer(text):
        name = m.group("flag") or m.group("quoted") or m.group("name")
        if not looks_secret(name):
            continue
        value = _LABELLED_VALUE.match(text, m.end())
        if value is not None:
            group = next(g for g in ("dq", "sq", "bare") if value.group(g) is not None)
            if value.group(group):
                spans.append(value.span(group))
    return spans


def _apply(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with the union of `spans` replaced, each stretch of overlapping ones by one MASK."""
    out, pos = [], 0
    for start, end in sorted(spans):
        if end <= pos:
            continue
        if start > pos:
            out.append(text[pos:start])
            out.append(MASK)
        elif not out:  # a span from the text's start; else out ends with the MASK this one overlaps
            out.append(MASK)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def mask_text(text: str) -> str:
    """`text` with every known secret value and every secret-shaped value replaced by ``****``."""
    if not text:
        return text
    text = shown_text(text)  # first: an escape sequence inside a secret would hide it from the search
    spans = _known_values().spans(text) + _shape_spans(text) + _label_spans(text)
    return _apply(text, spans) if spans else text


def _pair_name(mapping: Mapping[Any, Any]) -> str | None:
    """The name of an AWS-style name/value pair ({"Key": n, "Value": v} or {"Name": n, "Value": v})."""
    if len(mapping) != 2 or not all(isinstance(k, str) for k in mapping):
        return None
    keys = {k.lower(): k for k in mapping}
    name = keys.get("key", keys.get("name"))
    if name is None or "value" not in keys or not isinstance(mapping[name], str):
        return None
    return mapping[name]


def _mask_mapping(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    pair = _pair_name(mapping)
    out = {}
    for key, value in mapping.items():
        if pair is not None:
            secret = key.lower() == "value" and looks_secret(pair)
        else:
            secret = isinstance(key, str) and looks_secret(key)
        out[key] = MASK if secret and value is not None else mask_data(value)
    return out


def _mask_list(items: Iterable[Any]) -> list[Any]:
    """Items masked one by one; in an argument list, the value after a `--secret-name` flag too."""
    out = []
    after_secret_flag = False
    for item in items:
        out.append(MASK if after_secret_flag and item is not None else mask_data(item))
        flag = _FLAG.fullmatch(item) if isinstance(item, str) else None
        after_secret_flag = flag is not None and looks_secret(flag.group("name"))
    return out


def mask_data(obj: Any) -> Any:
    """A copy of `obj` (mappings, lists, scalars) safe to render: values under secret-looking keys
    become ``****``, and strings are masked as by :func:`mask_text`. Only string values change."""
    if isinstance(obj, str):
        return mask_text(obj)
    if isinstance(obj, Mapping):
        return _mask_mapping(obj)
    if isinstance(obj, (list, tuple)):
        return _mask_list(obj)
    if obj is None or isinstance(obj, (bool, int, float, dt.date, dt.time)):
        return obj
    return mask_text(str(obj))  # anything else would be rendered through str() anyway


class StreamMasker:
    """mask_text for streams of lines, one state per source (a host): a private key block
    printed over several lines is masked from its header to its END line."""

    def __init__(self) -> None:
        self._in_key: set[str] = set()

    def __call__(self, source: str, line: str) -> str:
        line = as_shown(line)
        if source in self._in_key:
            end = _PEM_END.search(line)
            if end is None:
                return MASK
            self._in_key.discard(source)
            return MASK + self(source, line[end.end():])
        begins = list(_PEM_BEGIN.finditer(line))
        if begins and not _PEM_END.search(line, begins[-1].end()):
            self._in_key.add(source)
        return mask_text(line)
