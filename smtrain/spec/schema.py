"""The job spec's JSON Schema for editors: the loader's rules, as far as a JSON Schema can state them.

Pydantic writes the schema from the models (each field type in fields.py brings its own part:
patterns, bounds, the text forms of numbers and flags). This module adds what the loader does
around the models: any value or key may be a string holding ${NAME} or ${NAME:-default}, expanded
before validation; a channel may be written as its URI alone. Defaults show as users write them
("30GB", "1d"): the models' defaults are written that way.

What no JSON Schema states (tests/spec/test_schema_agreement.py keeps the list): rules that tie
fields together (spot needs checkpoints, max_wait >= max_run, subnets with security groups, a
training field given as a hyperparameter), the catalog and the TensorFlow image table (checked by
the plan), files on disk (code.source_dir), the range of a number or duration written as text
("200" nodes, "29d"), non-finite numbers in hyperparameters, what a variable will expand to, an
unsupported ${...} form, non-ASCII characters in tags, duplicate keys, and YAML 1.1's typing where
editors read YAML 1.2 (`0o17`, `1_000`, `1:30`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from smtrain.spec.yaml_source import INTERPOLATION_PATTERN

_INTERPOLATED = {"type": "string", "pattern": INTERPOLATION_PATTERN,
                 "description": "${NAME} or ${NAME:-default}, expanded from the environment"}
_ANNOTATIONS = ("title", "description", "default", "examples")


def _or_interpolated(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, or a string holding a variable."""
    notes = {k: schema[k] for k in _ANNOTATIONS if k in schema}
    rule = {k: v for k, v in schema.items() if k not in notes}
    if set(rule) == {"anyOf"}:
        return {**notes, "anyOf": [*rule["anyOf"], _INTERPOLATED]}
    return {**notes, "anyOf": [rule, _INTERPOLATED]}


def _field(schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:  # a section (compute, training, ...): its own fields are handled in $defs
        return schema
    if schema.get("type") == "object":
        out = dict(schema)
        if "patternProperties" in out:  # pydantic's form of a key pattern lets other keys through
            [(pattern, value)] = out.pop("patternProperties").items()
            out["propertyNames"] = {**out.get("propertyNames", {}), "type": "string", "pattern": pattern}
            out["additionalProperties"] = value
            schema = out
        if isinstance(schema.get("additionalProperties"), dict):
            out["additionalProperties"] = _field(schema["additionalProperties"])
        if "propertyNames" in schema:
            out["propertyNames"] = _or_interpolated(schema["propertyNames"])
        return out
    if schema.get("type") == "array":
        return {**schema, "items": _field(schema["items"])} if "items" in schema else schema
    return _or_interpolated(schema)


def editor_schema(spec_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of `spec_model`, the job spec, with the loader's forms added."""
    schema = spec_model.model_json_schema()
    for section in (schema, *schema.get("$defs", {}).values()):
        properties = section.get("properties", {})
        for name, prop in properties.items():
            properties[name] = _field(prop)
    # A channel may be written as its URI alone; the loader expands it to {uri: ...}.
    inputs = schema["properties"]["inputs"]
    uri = schema["$defs"]["ChannelSpec"]["properties"]["uri"]
    channel = {"anyOf": [s for s in uri["anyOf"] if s.get("type") != "null"]} if "anyOf" in uri else uri
    inputs["additionalProperties"] = {"anyOf": [channel, inputs["additionalProperties"]]}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
