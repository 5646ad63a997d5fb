"""An AWS operation's input rules, read from botocore's service model, checked on a plain request.

botocore's ParamValidator checks types, required members and minimums; the service also refuses
what breaks a maximum, a pattern or an enum. Every constraint of the operation's input shape tree
is checked here, driven by the model itself: string length and pattern (Java regexes, see
java_regex), enums, integer and float ranges, list and map sizes, map keys and values, required
and unknown members, unions, recursively. Limits SageMaker documents that the model does not carry
are merged into their shapes from DOCUMENTED_LIMITS.

The model is botocore's data file, found with importlib.util.find_spec (botocore itself is never
imported: validate and plan stay fast) and parsed once per process.
"""

from __future__ import annotations

import difflib
import functools
import gzip
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smtrain.render import java_regex

SERVICE = "sagemaker"
OPERATION = "CreateTrainingJob"

# Limits SageMaker documents but botocore's model leaves out, by shape name, merged into the shape.
DOCUMENTED_LIMITS: dict[str, dict[str, int]] = {
    # SageMaker API Reference, StoppingCondition.MaxRuntimeInSeconds (the same words are in this
    # member's documentation in the model): "The default value is 1 day. The maximum value is 28 days."
    "MaxRuntimeInSeconds": {"max": 28 * 86400},
    # MaxWaitTimeInSeconds counts the run time plus the wait for spot capacity; SageMaker holds it
    # to the same 28 days as MaxRuntimeInSeconds (issue 10; smtrain.spec.model.MAX_RUN_LIMIT).
    "MaxWaitTimeInSeconds": {"max": 28 * 86400},
}

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Violation:
    """One constraint a request breaks: where in the request, and what."""

    path: Path_
    message: str
    at_key: bool = False  # the map key itself is at fault, not its value


def model_file(service: str = SERVICE) -> Path:
    """botocore's service-2.json(.gz) of the newest API version of `service`, without importing botocore."""
    spec = importlib.util.find_spec("botocore")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("botocore is not installed (smtrain needs boto3)")
    for location in spec.submodule_search_locations:
        versions = sorted((Path(location) / "data" / service).glob("*/service-2.json*"))
        if versions:
            return versions[-1]
    raise RuntimeError(f"botocore has no service model for {service}")


class ServiceModel:
    """The shapes of one service and the check of a value against one of them."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.shapes: dict[str, dict[str, Any]] = dict(data["shapes"])
        for name, limits in DOCUMENTED_LIMITS.items():
            if name in self.shapes:
                self.shapes[name] = {**self.shapes[name], **limits}
        self.operations: Mapping[str, Any] = data["operations"]

    def input_shape(self, operation: str) -> str:
        return self.operations[operation]["input"]["shape"]

    def shape_names(self, root: str) -> list[str]:
        """Every shape reachable from `root`, root first (each once)."""
        seen: list[str] = []
        todo = [root]
        while todo:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.append(name)
            shape = self.shapes[name]
            todo += [m["shape"] for m in shape.get("members", {}).values()]
            todo += [shape[part]["shape"] for part in ("member", "key", "value") if part in shape]
        return seen

    def check(self, value: Any, shape_name: str, path: Path_ = ()) -> list[Violation]:
        """Every constraint of `shape_name` that `value` breaks (empty when it is valid)."""
        shape = self.shapes[shape_name]
        kind = shape["type"]
        checker = _CHECKS.get(kind)
        if checker is None:
            return []
        return checker(self, shape, value, path)


def _type_error(value: Any, expected: str, path: Path_) -> list[Violation]:
    return [Violation(path, f"must be {expected}, not {type(value).__name__}")]


def _size(shape: Mapping[str, Any], count: int, unit: str, path: Path_) -> list[Violation]:
    if "max" in shape and count > shape["max"]:
        return [Violation(path, f"{count} {unit}, more than the {shape['max']} SageMaker accepts")]
    if "min" in shape and count < shape["min"]:
        return [Violation(path, f"{count} {unit}, fewer than the {shape['min']} SageMaker needs")]
    return []


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _structure(model: ServiceModel, shape: Mapping[str, Any], value: Any, path: Path_) -> list[Violation]:
    if not isinstance(value, Mapping):
        return _type_error(value, "a mapping", path)
    members = shape.get("members", {})
    found = [Violation(path + (name,), "missing: SageMaker requires it")
             for name in shape.get("required", ()) if name not in value]
    found += [Violation(path + (name,), f"unknown parameter {name!r}") for name in value if name not in members]
    if shape.get("union") and len([k for k in value if k in members]) != 1:
        found.append(Violation(path, f"exactly one of {', '.join(members)} must be given"))
    for name, member in members.items():
        if name in value:
            found += model.check(value[name], member["shape"], path + (name,))
    return found


def _list(model: ServiceModel, shape: Mapping[str, Any], value: Any, path: Path_) -> list[Violation]:
    if not isinstance(value, (list, tuple)):
        return _type_error(value, "a list", path)
    found = _size(shape, len(value), "items", path)
    for index, item in enumerate(value):
        found += model.check(item, shape["member"]["shape"], path + (index,))
    return found


def _map(model: ServiceModel, shape: Mapping[str, Any], value: Any, path: Path_) -> list[Violation]:
    if not isinstance(value, Mapping):
        return _type_error(value, "a mapping", path)
    found = _size(shape, len(value), "entries", path)
    for key, item in value.items():
        found += [Violation(v.path, f"name {v.message}", at_key=True)
                  for v in model.check(key, shape["key"]["shape"], path + (key,))]
        found += model.check(item, shape["value"]["shape"], path + (key,))
    return found


def _string(model: ServiceModel, shape: Mapping[str, Any], value: Any, path: Path_) -> list[Violation]:
    if not isinstance(value, str):
        return _type_error(value, "text", path)
    if "enum" in shape and value not in shape["enum"]:
        allowed = shape["enum"]
        close = difflib.get_close_matches(value, allowed, n=3)
        hint = f"closest: {', '.join(close)}" if close else ", ".join(allowed[:8]) + (", ..." if len(allowed) > 8 else "")
        return [Violation(path, f"{_shown(value)} is not one of the {len(allowed)} values SageMaker accepts "
                                f"in botocore's model ({hint})")]
    found = _size(shape, len(value), "characters", path)
    # A pattern is checked on text of an acceptable length (one message for one fault).
    if not found and "pattern" in shape and java_regex.fullmatch(shape["pattern"], value) is False:
        found.append(Violation(path, f"{_shown(value)} does not match the pattern SageMaker requires: "
                                     f"{shape['pattern']}"))
    return found


def _number(kinds: tuple[type, ...], expected: str) -> Any:
    def check(model: ServiceModel, shape: Mapping[str, Any], value: Any, path: Path_) -> list[Violation]:
        if isinstance(value, bool) or not isinstance(value, kinds):
            return _type_error(value, expected, path)
        if "max" in shape and value > shape["max"]:
            return [Violation(path, f"{value} is more than the {shape['max']} SageMaker accepts")]
        if "min" in shape and value < shape["min"]:
            return [Violation(path, f"{value} is less than the {shape['min']} SageMaker needs")]
        return []

    return check


def _boolean(model: ServiceModel, shape: Mapping[str, Any], value: Any, path: Path_) -> list[Violation]:
    return [] if isinstance(value, bool) else _type_error(value, "true or false", path)


_CHECKS = {
    "structure": _structure, "list": _list, "map": _map, "string": _string, "boolean": _boolean,
    "integer": _number((int,), "a whole number"), "long": _number((int,), "a whole number"),
    "float": _number((int, float), "a number"), "double": _number((int, float), "a number"),
}


def service_model(service: str = SERVICE) -> ServiceModel:
    """The model of `service`, parsed once per process."""
    return _parsed(service)


@functools.lru_cache(maxsize=2)
def _parsed(service: str) -> ServiceModel:
    path = model_file(service)
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return ServiceModel(json.loads(raw))


def check_request(request: Mapping[str, Any], operation: str = OPERATION, service: str = SERVICE) -> list[Violation]:
    """Every constraint of `operation`'s input (botocore's model plus DOCUMENTED_LIMITS) that `request` breaks."""
    model = service_model(service)
    return model.check(request, model.input_shape(operation))
