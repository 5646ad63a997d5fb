"""`smtrain check`'s text: the verdict, the layouts, the differences and their tolerance, each cause with its fix."""

from __future__ import annotations

from typing import Any

from smtrain.redact import mask_text


def check_text(result: Any) -> str:
    """The title, then a line per row, labels in a column."""
    lines = [result.title(), *(f"  {label:<14}{value}" for label, value in result.rows())]
    return mask_text("\n".join(lines))
