"""The docs site's reference pages, generated at build time from the code so they cannot drift from it (a MkDocs
hook: mkdocs.yml names this file). Three pages:

    reference/spec.md   every field of the job spec, from the spec's own JSON schema (`smtrain schema`)
    reference/cli.md    every command and option, from the click commands
    reference/api.md    the Python API (`smtrain.__all__` and `smtrain_tf.__all__`), from signatures and docstrings

`missing_descriptions()` names what has no description; the build warns for each (so `mkdocs build --strict`
fails) and tests/test_docs.py asserts there is none.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import click

LOG = logging.getLogger("mkdocs.hooks.docs_reference")

PAGES = ("reference/spec.md", "reference/cli.md", "reference/api.md")


def _cell(text: str) -> str:
    """Text for a Markdown table's cell: a `|` of its own does not end the cell, and `<job>` outside code spans is
    text, not an HTML tag."""
    parts = text.replace("|", "\\|").split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


# --- the spec ------------------------------------------------------------------------------------------------

def _schema() -> dict[str, Any]:
    from smtrain.spec.model import json_schema

    return json_schema()


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return schema["$defs"][ref.rsplit("/", 1)[1]] if ref else node


_NUMBER_TEXT = ("[+-]?", "[0-9]+(?:\\.[0-9]+)?\\s*(?:[Ee]")  # a number written as a string ("012", " 1e3")


_BOOLEAN_WORDS = {spelling for word in ("true", "false", "yes", "no", "on", "off")
                  for spelling in (word, word.upper(), word.capitalize())}


def _kinds(schema: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives a value may take, nested anyOf flattened, without what every field of its kind also takes:
    null, `${VAR}` text, a whole number or real as a string, YAML's spellings of a boolean (yes, On...)."""
    kinds = []
    for option in node.get("anyOf") or [node]:
        option = _resolve(schema, option)
        if "anyOf" in option:
            kinds += _kinds(schema, option)
            continue
        pattern = option.get("pattern", "")
        if (option.get("type") == "null" or "\\$\\{" in pattern
                or (option.get("type") == "string" and any(p in pattern for p in _NUMBER_TEXT))
                or (option.get("enum") and set(option["enum"]) <= _BOOLEAN_WORDS)):
            continue
        kinds.append(option)
    return kinds


def _type_text(schema: dict[str, Any], kind: dict[str, Any]) -> str:
    if "enum" in kind:
        return " \\| ".join(f"`{v}`" for v in kind["enum"])
    if "const" in kind:
        return f"`{json.dumps(kind['const'])}`"
    if kind.get("type") == "array":
        items = _kinds(schema, kind.get("items", {}))
        return f"list of {_type_text(schema, items[0]) if items else 'any'}"
    if kind.get("type") == "object" and "properties" in kind:
        return "mapping"
    if kind.get("type") == "object":
        values = kind.get("additionalProperties")
        inner = _kinds(schema, values) if isinstance(values, dict) else []
        return f"mapping of name to {_type_text(schema, inner[0])}" if inner else "mapping"
    return str(kind.get("type", "any"))


def _limits(kind: dict[str, Any]) -> str:
    parts = []
    for key, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"),
                      ("minLength", "length >="), ("maxLength", "length <="), ("maxItems", "items <=")):
        if key in kind and not (key == "maximum" and kind[key] == 2 ** 53 - 1):
            parts.append(f"{word} {kind[key]}")
    pattern = kind.get("pattern", "").removeprefix("^(?:").removesuffix(")(?![\\s\\S])")
    if pattern and "\\x00" not in pattern:  # "no control characters" is every text field's limit
        # A long pattern (an image URI's) says less than its description: `smtrain schema` has it whole.
        # As HTML: a table cell's `|` would end the cell, and a code span would show the backslash escaping it.
        code = "".join(f"&#{ord(c)};" if c in "|[]()*_\\`<>&" else c for c in pattern)
        parts.append(f"matches <code>{code}</code>" if len(pattern) <= 48 else "a pattern (`smtrain schema`)")
    return "; ".join(parts)


def spec_fields() -> Iterator[tuple[str, str, str, str, str]]:
    """(dotted field, type, default, limits, description) of every field, in the schema's order; a mapping of
    named entries (inputs, compute.instance_groups...) shows its entries' fields under `NAME`."""
    schema = _schema()

    def walk(prefix: str, node: dict[str, Any]) -> Iterator[tuple[str, str, str, str, str]]:
        required = set(node.get("required", ()))
        for name, prop in node.get("properties", {}).items():
            path = f"{prefix}{name}"
            kinds = _kinds(schema, prop)
            if prop.get("$ref"):
                kinds = [_resolve(schema, prop)]
            types = " or ".join(dict.fromkeys(_type_text(schema, k) for k in kinds)) or "any"
            default = "required" if name in required else (
                f"`{json.dumps(prop['default'])}`" if "default" in prop else "")
            limits = "; ".join(x for x in (_limits(k) for k in kinds) if x)
            yield path, types, default, limits, prop.get("description", "")
            for kind in kinds:
                if "properties" in kind:
                    yield from walk(f"{path}.", kind)
                values = kind.get("additionalProperties")
                if isinstance(values, dict):
                    for inner in _kinds(schema, values):
                        if "properties" in inner:
                            yield from walk(f"{path}.NAME.", inner)
                items = kind.get("items")
                if isinstance(items, dict):
                    for inner in _kinds(schema, items):
                        if "properties" in inner:
                            yield from walk(f"{path}[].", inner)

    seen = set()
    for row in walk("", schema):
        if row[0] not in seen:  # a field both an object and a list of it (tuning ranges) once
            seen.add(row[0])
            yield row


def spec_page() -> str:
    lines = ["# Spec fields", "",
             "Every field of the job spec, generated from the spec's own schema (`smtrain schema` prints it as JSON "
             "Schema for your editor). Every field also takes `${VAR}` and `${VAR:-default}`; a mapping of named "
             "entries shows its entries' fields under `NAME`, a list its items' under `[]`. How the fields work "
             "together, with an example of each: [The job spec](job-spec.md).", ""]
    rows = list(spec_fields())
    groups = {path for path, *_ in rows if "." in path or "[" in path}
    groups = {path.split(".")[0].split("[")[0] for path in groups}
    sections: dict[str, list[tuple[str, str, str, str, str]]] = {"Top-level fields": []}
    for row in rows:
        top = row[0].split(".")[0].split("[")[0]
        sections.setdefault(f"`{top}`" if top in groups else "Top-level fields", []).append(row)
    for title, section in sections.items():
        lines += ["", f"## {title}", "", "| field | type | default | description |", "|---|---|---|---|"]
        for path, types, default, limits, description in section:
            text = _cell(description) + (f" (limits: {limits})" if limits else "")
            lines.append(f"| `{path}` | {types} | {_cell(default)} | {text} |")
    return "\n".join(lines) + "\n"


# --- the CLI -------------------------------------------------------------------------------------------------

def _commands() -> Iterator[tuple[str, click.Command]]:
    from smtrain.cli.commands import main

    yield "smtrain", main
    ctx = click.Context(main, info_name="smtrain")
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        if command is not None and not command.hidden:
            yield f"smtrain {name}", command


def cli_page() -> str:
    lines = ["# CLI reference", "", "Every command and option, generated from the commands themselves "
             "(`smtrain COMMAND --help` says the same).", ""]
    for path, command in _commands():
        ctx = click.Context(command, info_name=path)
        lines += [f"## `{path}`", "", "```text", command.get_usage(ctx), "```", "",
                  inspect.cleandoc(command.help or ""), ""]
        options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
        if options:
            lines += ["| option | help |", "|---|---|"]
            for option in options:
                record = option.get_help_record(ctx)
                if record:
                    names, help_text = record
                    lines.append(f"| `{names}` | {_cell(help_text)} |")
            lines.append("")
    return "\n".join(lines) + "\n"


# --- the Python API ------------------------------------------------------------------------------------------

def _public(package: str) -> Iterator[tuple[str, Any]]:
    module = importlib.import_module(package)
    for name in sorted(module.__all__):
        if package == "smtrain" and name == "plan":  # the stage package; its call is api.planning.plan
            from smtrain.api.planning import plan

            yield "smtrain.plan", plan
        else:
            yield f"{package}.{name}", getattr(module, name)


def _members(cls: type) -> Iterator[tuple[str, Any]]:
    """A class's own public methods and properties (not a dataclass's fields, nor what it inherits)."""
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (property, staticmethod, classmethod)) or inspect.isfunction(value):
            yield name, value


def api_objects() -> Iterator[tuple[str, Any]]:
    """(qualified name, object) of every public function, class and class member."""
    for package in ("smtrain", "smtrain_tf"):
        for name, obj in _public(package):
            yield name, obj
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                for member, value in _members(obj):
                    yield f"{name}.{member}", value


def _doc(obj: Any) -> str:
    target = obj.fget if isinstance(obj, property) else getattr(obj, "__func__", obj)
    return inspect.cleandoc(target.__doc__ or "") if target.__doc__ else ""


def _signature(name: str, obj: Any) -> str:
    target = getattr(obj, "__func__", obj)
    if isinstance(obj, property):
        return name
    try:
        signature = f"{name}{inspect.signature(target)}"
    except (TypeError, ValueError):
        return name
    return re.sub(r" at 0x[0-9a-f]+>", ">", signature)  # a default function's repr: the same page every build


def api_page() -> str:
    lines = ["# Python API reference", "",
             "`import smtrain` is the library the CLI runs on (see [From Python and Jupyter]"
             "(../guides/python-and-jupyter.md)); `import smtrain_tf` is for a training script of your own, in the "
             "job (see [Your own script](../guides/own-script.md)). Generated from the code's signatures and "
             "docstrings.", ""]
    for package in ("smtrain", "smtrain_tf"):
        lines += [f"## `{package}`", ""]
        for name, obj in api_objects():
            if name.split(".")[0] != package:
                continue
            depth = "####" if name.count(".") > 1 and not name.startswith("smtrain.plan") else "###"
            lines += [f"{depth} `{name}`", "", "```python", _signature(name.rsplit(".", 1)[-1], obj), "```", "",
                      _doc(obj), ""]
    return "\n".join(lines) + "\n"


# --- what lacks a description --------------------------------------------------------------------------------

def missing_descriptions() -> list[str]:
    """Each spec field, command, option and public API object without a description."""
    missing = [f"spec field {path}" for path, *_, description in spec_fields() if not description.strip()]
    for path, command in _commands():
        if not (command.help or "").strip():
            missing.append(f"command `{path}`")
        for option in command.params:
            if isinstance(option, click.Option) and not option.hidden and not (option.help or "").strip():
                missing.append(f"option {option.opts[0]} of `{path}`")
    missing += [f"API {name}" for name, obj in api_objects() if not _doc(obj)]
    return missing


# --- the MkDocs hook -----------------------------------------------------------------------------------------

def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for problem in missing_descriptions():
        LOG.warning("no description: %s", problem)
    for page, make in zip(PAGES, (spec_page, cli_page, api_page), strict=True):
        files.append(File.generated(config, page, content=make()))
    return files
