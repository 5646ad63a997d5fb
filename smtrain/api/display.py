"""How the API's objects show themselves in Jupyter: small HTML tables (`_repr_html_`), every value masked
(smtrain.redact) and escaped. Plain text (`__repr__`) stays one line; the CLI has its own renderers."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from smtrain.redact import mask_text


def cell(value: Any) -> str:
    """A value as a table cell shows it: masked and escaped; None as a dash."""
    if value is None:
        return "-"
    if isinstance(value, float):
        value = f"{value:.6g}"
    return html.escape(mask_text(str(value)))


def fields_table(title: str, rows: Iterable[tuple[str, Any]]) -> str:
    """A two-column table (field, value) under a title: a Plan's or a Job's facts."""
    body = "".join(f"<tr><th style='text-align:left'>{cell(k)}</th><td style='text-align:left'>{cell(v)}</td></tr>"
                   for k, v in rows)
    return f"<div><strong>{cell(title)}</strong><table>{body}</table></div>"


def grid_table(headings: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> str:
    """A table with headings (the metrics per epoch, the trials of a tuning)."""
    head = "".join(f"<th>{cell(h)}</th>" for h in headings)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    caption = f"<strong>{cell(title)}</strong>" if title else ""
    return f"<div>{caption}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def lines_block(lines: Sequence[str]) -> str:
    """Log lines as a preformatted block."""
    return "<pre style='margin:0'>" + html.escape(mask_text("\n".join(lines))) + "</pre>"
