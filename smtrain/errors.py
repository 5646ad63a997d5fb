"""The exceptions smtrain raises for things a person can act on, each with the exit code the CLI maps it to.

The library (`import smtrain`) raises them and never exits; the CLI's guard turns them into a message and that
code. Every one is a UserError, so `except smtrain.UserError` catches them all:

    UserError        one line for a person, and its exit code (default 4)
    SpecError        the spec's problems, each at its file:line:column or field path (spec/problems.py), exit 2
    CatalogError     the instance catalog or prices file (plan/catalog.py), exit 2
    AwsError         an AWS API, credential or network error as one actionable line, exit 4
    PreflightError   the code would fail at these lines for certain (or --strict and any finding), exit 2
    WaitTimeout      a wait ran out; the job keeps running, exit 124

And one that is no UserError: Terminated, SIGTERM turned into an interrupt (a KeyboardInterrupt), so that what
cleans up after Ctrl-C cleans up after it too; the CLI says "interrupted" and exits 143.
"""

from __future__ import annotations

from typing import Any

from smtrain import exit_codes
from smtrain.redact import mask_text


class UserError(Exception):
    """A problem the user can act on: one line, and the exit code it maps to.

    Raised below the CLI too (backends, upload), which is why it lives outside cli/.
    """

    def __init__(self, message: str, code: int = exit_codes.API) -> None:
        super().__init__(message)
        self.code = code

    def __str__(self) -> str:
        # Shown by whoever prints it (a notebook's traceback too): a secret in the message is masked.
        return mask_text(super().__str__())

    def __repr__(self) -> str:
        return mask_text(super().__repr__())

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of the traceback: the message is for a person, smtrain's frames are not.
        return [f"{type(self).__name__}: {line}" for line in str(self).splitlines() or [""]]


class AwsError(UserError):
    """AWS said no, or could not be reached: the message says what to do (smtrain.aws.explain)."""

    def __init__(self, message: str, code: int = exit_codes.API) -> None:
        super().__init__(message, code)


class PreflightError(UserError):
    """The code's checks refused the job before anything was sent: `findings` (smtrain.preflight.scan.Finding)
    are what was found, errors and, under strict, warnings."""

    def __init__(self, message: str, findings: list[Any]) -> None:
        super().__init__(message, exit_codes.USAGE)
        self.findings = findings

    def __reduce__(self) -> tuple[Any, ...]:  # pickled across processes (a pool's worker) with its findings
        return type(self), (self.args[0], self.findings)

    def _render_traceback_(self) -> list[str]:
        return [*super()._render_traceback_(), *(mask_text(f.render()) for f in self.findings)]


class WaitTimeout(UserError):
    """A wait for `job` (its last JobInfo) ran out after `timeout` seconds; the job was left running."""

    def __init__(self, job: Any, timeout: float) -> None:
        super().__init__(f"{job.name} is still {job.status} after {timeout:g}s", exit_codes.TIMEOUT)
        self.job = job
        self.timeout = timeout

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.job, self.timeout)


class Terminated(KeyboardInterrupt):
    """smtrain received SIGTERM (a CI runner cancelling a step, `kill`): handled everywhere as Ctrl-C is."""


def raise_terminated(signum: int, frame: object) -> None:
    """A SIGTERM handler: the signal becomes Terminated where the main thread is."""
    raise Terminated()
