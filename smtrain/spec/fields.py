"""The value types of the spec's fields: what each accepts, and the JSON Schema that says the same.

Each type is an Annotated pydantic type with one validator and its own JSON Schema, so the loader
and `smtrain schema` state one rule. YAML types most values; text (a `--set` value, or a quoted
one) is read as YAML would read it: "4" is a whole number, "true"/"on" a flag. Numbers are finite,
whole numbers fit JSON exactly (at most 2^53-1), a boolean is never a number, and a size always
carries its unit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Annotated, Any

from annotated_types import GroupedMetadata
from pydantic import PlainValidator, WithJsonSchema

from smtrain.spec import patterns
from smtrain.spec.problems import brief
from smtrain.spec.units import DURATION_PATTERN, LARGEST, SIZE_PATTERN, SIZE_UNITS_HINT, parse_duration, parse_size

MAX_RUN_LIMIT = 28 * 86400  # SageMaker's ceiling for MaxRuntimeInSeconds / MaxWaitTimeInSeconds

_WHOLE_TEXT = r"\s*[+-]?[0-9]+\s*"
_REAL_TEXT = r"\s*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*"
# YAML 1.1's spellings of true and false, as PyYAML reads a plain scalar.
FLAG_WORDS = {w: w.lower() in ("true", "yes", "on")
              for base in ("true", "false", "yes", "no", "on", "off") for w in (base, base.title(), base.upper())}


class _AsWritten:
    """Marks a field whose number or flag from YAML is taken as the text it was written as (2.10, on)."""


AS_WRITTEN = _AsWritten()


def _text_form(pattern: str) -> dict[str, Any]:
    return {"type": "string", "pattern": patterns.whole_text(pattern)}


class Rule(GroupedMetadata):
    """A field's check and its JSON Schema, as one piece of `Annotated` metadata: `Annotated[int, whole(1, 8)]`.
    (A factory that returned the whole Annotated type would be a call in a type, which no type checker reads.)"""

    def __init__(self, check: Callable[[object], Any], schema: dict[str, Any]) -> None:
        self.check, self.schema = check, schema

    def __iter__(self) -> Iterator[object]:
        yield PlainValidator(self.check)
        yield WithJsonSchema(self.schema)


def _rule(check: Callable[[object], Any], schema: dict[str, Any]) -> Rule:
    return Rule(check, schema)


def whole(minimum: int = 0, maximum: int = LARGEST) -> Rule:
    """A whole number from `minimum` to `maximum`: an int, or its digits as text."""

    def check(value: object) -> int:
        if isinstance(value, str) and re.fullmatch(_WHOLE_TEXT, value):
            number = int(value)
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
            number = int(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            raise ValueError(f"{brief(value)} is not a whole number")
        if not minimum <= number <= maximum:
            limit = f"at least {minimum}" if number < minimum else f"at most {maximum}"
            raise ValueError(f"{brief(value)}: must be {limit}")
        return number

    return _rule(check, {"anyOf": [{"type": "integer", "minimum": minimum, "maximum": maximum},
                                         _text_form(_WHOLE_TEXT)]})


def real(*, above: float | None = None, minimum: float | None = None, maximum: float | None = None) -> Rule:
    """A finite number (inf and nan are refused), within the bounds given."""

    def check(value: object) -> float:
        if not (isinstance(value, str) and re.fullmatch(_REAL_TEXT, value)
                or isinstance(value, (int, float)) and not isinstance(value, bool)):
            raise ValueError(f"{brief(value)} is not a number")
        try:
            number = float(value)
        except OverflowError:  # an int beyond any float
            number = math.inf
        if not math.isfinite(number):
            raise ValueError(f"{brief(value)} is not a finite number")
        if above is not None and number <= above:
            raise ValueError(f"{brief(value)}: must be more than {above:g}")
        if minimum is not None and number < minimum:
            raise ValueError(f"{brief(value)}: must be at least {minimum:g}")
        if maximum is not None and number > maximum:
            raise ValueError(f"{brief(value)}: must be at most {maximum:g}")
        return number

    number: dict[str, Any] = {"type": "number"}
    for key, bound in (("exclusiveMinimum", above), ("minimum", minimum), ("maximum", maximum)):
        if bound is not None:
            number[key] = bound
    return _rule(check, {"anyOf": [number, _text_form(_REAL_TEXT)]})


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in FLAG_WORDS:
        return FLAG_WORDS[value]
    raise ValueError(f"{brief(value)} is not true or false")


Flag = Annotated[bool, _rule(_flag, {"anyOf": [{"type": "boolean"}, {"enum": sorted(FLAG_WORDS)}]})]


def _size(value: object) -> int:
    return parse_size(value)


Size = Annotated[int, _rule(_size, {**_text_form(SIZE_PATTERN),
                           "description": f"a size with its unit, such as 40GB or 100GiB; units: {SIZE_UNITS_HINT}"})]


def duration(minimum: int = 0, maximum: int = LARGEST) -> Rule:
    """Seconds: a whole number of them, or text such as 90m, 6h, 1d."""

    def check(value: object) -> int:
        seconds = parse_duration(value)
        if seconds < minimum:
            raise ValueError(f"{brief(value)}: must be at least {minimum} second{'s' if minimum != 1 else ''}")
        if seconds > maximum:
            limit = "SageMaker's limit of 28 days" if maximum == MAX_RUN_LIMIT else f"the limit of {maximum}s"
            raise ValueError(f"{brief(value)} is over {limit}")
        return seconds

    return _rule(check, {"anyOf": [{"type": "integer", "minimum": minimum, "maximum": maximum},
                                         _text_form(DURATION_PATTERN)],
                               "description": "seconds, or a duration such as 90m, 6h, 1d"})


def checked(kind: str, pattern: patterns.Pattern, hint: str) -> Rule:
    """Text that matches `pattern` whole."""

    def check(value: object) -> str:
        if not pattern.matches(value):
            raise ValueError(f"{brief(value)} is not {kind}: {hint}")
        return value  # type: ignore[return-value]

    return _rule(check, pattern.json_schema())


def mapping_key(kind: str, ok: Callable[[str], bool], hint: str, schema: dict[str, Any]) -> Rule:
    """A mapping key (a channel, variable or tag name) and the rule it follows."""

    def check(value: object) -> str:
        if not isinstance(value, str) or not ok(value):
            raise ValueError(f"{brief(value)} is not {kind}: {hint}")
        return value

    return _rule(check, schema)


def _scalar_text(value: object) -> str:
    if value is None:  # `KEY:` with nothing after it, or an empty ${VAR}
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{brief(value)} is not a finite number (quote it for the text)")
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ValueError(f"expected a plain value (text or number), not {type(value).__name__}")


def _hyperparameter(value: object) -> str | int | float | bool:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{brief(value)} is not a finite number (quote it for the text)")
    if isinstance(value, (str, int, float, bool)):
        return value
    raise ValueError(f"expected a plain value (text, number or true/false), not {type(value).__name__}")


# One line of text: no control characters (a newline, a tab, U+2028) in a name, a path or options.
LINE_CHARS = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]"


def is_line(text: str) -> bool:
    return re.fullmatch(f"{LINE_CHARS}*", text) is not None


def _line(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{brief(value)} is not text")
    if not is_line(value):
        raise ValueError(f"{brief(value)}: control characters (a newline, a tab) are not allowed here")
    return value


Line = Annotated[str, _rule(_line, {"type": "string", "pattern": patterns.whole_text(f"{LINE_CHARS}*")})]

_PLAIN = {"type": ["string", "number", "boolean"]}
Text = Annotated[Annotated[str, _rule(_scalar_text, _PLAIN)], AS_WRITTEN]
HyperValue = Annotated[str | int | float | bool, _rule(_hyperparameter, _PLAIN)]


def _processes(value: object) -> int | str:
    if value == "auto":
        return "auto"
    if isinstance(value, str) and re.fullmatch(_WHOLE_TEXT, value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= LARGEST:
        return value
    raise ValueError(f"{brief(value)} is not 'auto' or a positive whole number")


ProcessesPerHost = Annotated[int | str, _rule(_processes, {"anyOf": [{"const": "auto"},
                                                            {"type": "integer", "minimum": 1, "maximum": LARGEST},
                                                            _text_form(_WHOLE_TEXT)]})]

# A spec may name local directories (or file:// URIs) for `submit --local`.
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*://")


def _data_uri(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected an s3:// URI, a file:// URI or a local path")
    if not is_line(value):
        raise ValueError(f"{brief(value)}: a URI or path cannot hold control characters (a newline, a tab)")
    if value.startswith("s3://") and not patterns.S3_URI.matches(value):
        raise ValueError(f"{brief(value)} is not a valid S3 URI: write s3://bucket/prefix")
    if _SCHEME.match(value) and not value.startswith(("s3://", "file://")):
        raise ValueError(f"{brief(value)}: only s3://, file:// or a local path are supported")
    return value


_LOCAL_PATH = rf"(?![a-z][a-z0-9+.-]*://){LINE_CHARS}*[^\s\x00-\x1f\x7f-\x9f\u2028\u2029]{LINE_CHARS}*"
DataUri = Annotated[str, _rule(_data_uri, {"type": "string",
                                  "pattern": patterns.whole_text(f"{patterns.S3_URI.body}|file://{LINE_CHARS}*|{_LOCAL_PATH}"),
                                  "description": "s3://bucket/prefix, file:///path or a local path"})]
S3Uri = Annotated[str, checked("an S3 URI", patterns.S3_URI, "write s3://bucket/prefix")]

# YAML 1.1's false words: `tensorboard: off` turns an output off; an editor (YAML 1.2) reads `off` as text.
_FALSE_WORDS = sorted(w for w, on in FLAG_WORDS.items() if not on)


def _s3_uri_or_off(value: object) -> str | bool:
    """An S3 URI, or false (off, no) for none. True is refused: the default is what leaving the field out
    gives, and a `true` would read as a place that is not written anywhere."""
    if isinstance(value, bool) or (isinstance(value, str) and value in FLAG_WORDS):
        if not _flag(value):
            return False
        raise ValueError(f"{brief(value)}: write an S3 URI (s3://bucket/prefix) or false; leave the field out "
                         "for the default")
    if not patterns.S3_URI.matches(value):
        raise ValueError(f"{brief(value)} is not an S3 URI or false: write s3://bucket/prefix, or false for none")
    return value  # type: ignore[return-value]


S3UriOrOff = Annotated[str | bool, _rule(_s3_uri_or_off, {"anyOf": [patterns.S3_URI.json_schema(), {"const": False},
                                                           {"enum": _FALSE_WORDS}]})]

# Tag text: letters and digits of any script, spaces and _.:/=+-@ (the schema can only refuse the
# ASCII characters outside that set; the loader checks every character).
_TAG_EXTRA = set(" _.:/=+-@")
_TAG_SCHEMA_CHARS = r"[^\x00-\x1f\x7f!\"#$%&'()*,;<>?\[\\\]^`{|}~]"


def tag_text(text: str) -> bool:
    return all(c.isalnum() or c in _TAG_EXTRA for c in text)


def _tag_value(value: object) -> str:
    text = _scalar_text(value)
    if len(text) > 256 or not tag_text(text):
        raise ValueError("tag values are up to 256 letters, digits, spaces or _.:/=+-@")
    return text


TagValue = Annotated[Annotated[str, _rule(_tag_value, {"anyOf": [{"type": "string", "maxLength": 256,
                                               "pattern": patterns.whole_text(f"{_TAG_SCHEMA_CHARS}*")},
                                              {"type": ["number", "boolean"]}]})], AS_WRITTEN]
TAG_KEY_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 128,
                  "pattern": patterns.whole_text(f"(?![Aa][Ww][Ss]:){_TAG_SCHEMA_CHARS}+")}
