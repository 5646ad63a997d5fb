"""The one exception type that carries a message for a person and the exit code it maps to."""

from __future__ import annotations

from smtrain import exit_codes


class UserError(Exception):
    """A problem the user can act on: one line, and the exit code it maps to.

    Raised below the CLI too (backends, upload), which is why it lives outside cli.py.
    """

    def __init__(self, message: str, code: int = exit_codes.API) -> None:
        super().__init__(message)
        self.code = code
