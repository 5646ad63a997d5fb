"""The text of an imported spec (`smtrain import`): a header saying where it came from, what was not carried over
and why (each with its file:line), then the spec's fields in the order `smtrain init` writes them."""

from __future__ import annotations

import yaml

from smtrain.spec.sdk_arguments import Imported

__all__ = ["imported_text"]


def imported_text(imported: Imported, came_from: str) -> str:
    """The YAML text of `imported`, its notes as comments; `came_from`: "launch.py" or "training job NAME"."""
    out = [f"# Imported by `smtrain import` from {came_from}. Check it: smtrain plan <this file>",
           "# Every field: the docs' \"The job spec\"; the mapping: the docs' \"Coming from the SageMaker SDK\""]
    for variable in imported.variables:
        out.append(f"# ${{{variable}}}: read from the environment (the notes below say why); export {variable} or "
                   "write the value")
    for heading, notes in (("Taken from the launcher's defaults (it may be run with others):",
                            [n for n in imported.notes if n.taken]),
                           ("Not carried over, or carried differently:", [n for n in imported.notes if not n.taken])):
        if notes:
            out.append(f"# {heading}")
            out += [f"#   {' '.join(note.render().splitlines())}" for note in notes]
    body = yaml.safe_dump(imported.data, sort_keys=False, allow_unicode=True, width=10**6, default_flow_style=False)
    return "\n".join(out) + "\n" + body
