"""Known failures as a message and an exit code (README's exit codes), the same for every command."""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from smtrain import exit_codes
from smtrain.cli.closed_output import ClosedOutputGroup
from smtrain.errors import PreflightError, Terminated, UserError
from smtrain.plan.catalog import CatalogError
from smtrain.redact import mask_text
from smtrain.spec.problems import SpecError

F = TypeVar("F", bound=Callable[..., Any])


def _fail(ctx: click.Context, message: str, code: int, problems: list[dict[str, Any]] | None = None) -> None:
    click.echo(mask_text(message), err=True)
    _document(ctx, message, code, problems)
    ctx.exit(code)


def _document(ctx: click.Context, message: str, code: int, problems: list[dict[str, Any]] | None = None) -> None:
    """With -o json/yaml, the failure as the command's one document on stdout too, so that a CI step's parser
    always gets one (the message on stderr stays for people)."""
    fmt = ctx.params.get("output")
    if fmt not in ("json", "yaml") or ctx.find_root().meta.get("smtrain.document_printed"):
        return  # text, or the command printed its own document before it failed
    from smtrain.cli.render import dump

    first = message.strip().splitlines()[0] if message.strip() else message
    dump({"ok": False, "exit_code": code, "error": first.removeprefix("error: "), "problems": problems or []}, fmt)


def requested_format(args: Sequence[str]) -> str | None:
    """The -o/--output value (json or yaml) on a command line as typed: a usage error stops click before the
    command's options are read."""
    found = None
    tokens = iter(args)
    for token in tokens:
        if token == "--":
            break
        if token in ("-o", "--output"):
            found = next(tokens, None)
        elif token.startswith("--output="):
            found = token.split("=", 1)[1]
        elif token.startswith("-o") and not token.startswith("--"):
            found = token[2:]
    return found if found in ("json", "yaml") else None


class GuardedGroup(ClosedOutputGroup):
    """smtrain's top command. A usage error (an unknown option or command, a missing argument, a bad value)
    of a command line that asks for -o json/yaml prints its failure document on stdout too, as every other
    failure does; click's message stays on stderr, with click's exit code (2)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        typed = list(args)
        ctx = super().make_context(info_name, args, parent=parent, **extra)
        ctx.meta["smtrain.argv"] = typed  # meta is shared by the command's context below
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            fmt = requested_format(ctx.meta.get("smtrain.argv", ()))
            if fmt and not ctx.meta.get("smtrain.document_printed"):
                from smtrain.cli.render import dump

                dump({"ok": False, "exit_code": exc.exit_code, "error": exc.format_message(), "problems": []}, fmt)
            raise


def guard(fn: F) -> F:
    """Turn known failures into a message and an exit code; tracebacks only with --debug.

    Everything printed here passes through mask_text(): no secret value reaches the terminal, not
    even in a --debug traceback (the spec's secrets are registered as soon as it is read).
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        debug = ctx.find_root().params.get("debug", False)
        try:
            return fn(*args, **kwargs)
        except SpecError as exc:
            from smtrain.cli.render import echo_problems, problem_dict

            echo_problems(exc.problems)
            n = len(exc.problems)
            summary = f"{n} problem{'s' if n != 1 else ''} found; nothing was sent."
            click.echo(summary, err=True)
            _document(ctx, summary, exit_codes.USAGE, [problem_dict(p) for p in exc.problems])
            ctx.exit(exit_codes.USAGE)
        except CatalogError as exc:
            _fail(ctx, f"error: {exc}", exit_codes.USAGE)
        except PreflightError as exc:  # the findings were shown; the count and "nothing was sent"
            _fail(ctx, str(exc), exc.code)
        except UserError as exc:
            _fail(ctx, _traceback(exc) if debug else f"error: {exc}", exc.code)
        except Terminated:
            _fail(ctx, "interrupted (SIGTERM)", exit_codes.TERMINATED)
        except KeyboardInterrupt:
            _fail(ctx, "interrupted", exit_codes.INTERRUPTED)
        except (click.exceptions.Exit, click.ClickException, click.Abort, BrokenPipeError):
            raise  # BrokenPipeError: stdout's reader went away; the entry ends quietly (closed_output.py)
        except Exception as exc:  # a bug: say so plainly, keep the traceback for --debug
            _fail(ctx, _traceback(exc) if debug else
                  f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
                  exit_codes.INTERNAL)

    return wrapper  # type: ignore[return-value]


def _traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
