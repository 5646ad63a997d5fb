"""Command-line wiring only: parse, call, print, exit code."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from smtrain import exit_codes
from smtrain.catalog import Catalog, CatalogError, load_catalog
from smtrain.problems import SpecError
from smtrain.spec import LoadedSpec, json_schema, load_spec
from smtrain.units import parse_size

F = TypeVar("F", bound=Callable[..., Any])


class UserError(Exception):
    """A problem the user can act on: one line, and the exit code it maps to."""

    def __init__(self, message: str, code: int = exit_codes.API) -> None:
        super().__init__(message)
        self.code = code


def _guard(fn: F) -> F:
    """Turn known failures into a message and an exit code; tracebacks only with --debug."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        debug = ctx.find_root().params.get("debug", False)
        try:
            return fn(*args, **kwargs)
        except SpecError as exc:
            from smtrain.render import echo_problems

            echo_problems(exc.problems)
            n = len(exc.problems)
            click.echo(f"{n} problem{'s' if n != 1 else ''} found; nothing was sent.", err=True)
            ctx.exit(exit_codes.USAGE)
        except CatalogError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exit_codes.USAGE)
        except UserError as exc:
            if debug:
                raise
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(exit_codes.INTERRUPTED)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # a bug: say so plainly, keep the traceback for --debug
            if debug:
                raise
            click.echo(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
                       err=True)
            ctx.exit(exit_codes.INTERNAL)

    return wrapper  # type: ignore[return-value]


def _catalog(ctx: click.Context) -> Catalog:
    root = ctx.find_root().params
    return load_catalog(root.get("catalog"), root.get("prices"))


def _load(spec_file: str, overrides: tuple[str, ...]) -> LoadedSpec:
    return load_spec(spec_file, overrides)


spec_argument = click.argument("spec_file", metavar="SPEC", type=click.Path(dir_okay=False))
set_option = click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE",
                          help="Override a spec field, e.g. --set compute.nodes=4 (repeatable).")


def output_option(*choices: str) -> Callable[[F], F]:
    return click.option("--output", "-o", "output", type=click.Choice(choices), default=choices[0],
                        show_default=True, help="Output format.")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--debug", is_flag=True, help="Show Python tracebacks for unexpected errors.")
@click.option("--catalog", type=click.Path(dir_okay=False, path_type=Path), envvar="SMTRAIN_CATALOG",
              help="Your own instance catalog (YAML), merged over the bundled one. [env SMTRAIN_CATALOG]")
@click.option("--prices", type=click.Path(dir_okay=False, path_type=Path), envvar="SMTRAIN_PRICES",
              help="A YAML/JSON map of instance type -> hourly price overriding the catalog's. "
                   "[env SMTRAIN_PRICES]")
@click.version_option(package_name="smtrain")
def main(debug: bool, catalog: Path | None, prices: Path | None) -> None:
    """Launch TensorFlow training jobs on Amazon SageMaker GPUs from a YAML job spec.

    Exit codes: 0 ok/Completed, 1 Failed, 2 invalid spec or usage, 3 Stopped,
    4 AWS/API error, 124 wait timed out, 130 interrupted.
    """


@main.command()
@spec_argument
@set_option
@output_option("text", "json")
@_guard
def validate(spec_file: str, overrides: tuple[str, ...], output: str) -> None:
    """Check a job spec: every problem, with file:line:column. No AWS, no TensorFlow."""
    from smtrain.plan import build_plan
    from smtrain.render import dump, echo_problems, problem_dict

    try:
        plan = build_plan(_load(spec_file, overrides), _catalog(click.get_current_context()))
    except SpecError as exc:
        if output == "json":
            dump({"valid": False, "problems": [problem_dict(p) for p in exc.problems]}, "json")
            click.get_current_context().exit(exit_codes.USAGE)
        raise
    if output == "json":
        dump({"valid": True, "problems": [], "warnings": [problem_dict(w) for w in plan.warnings]}, "json")
        return
    echo_problems(plan.warnings, label="warning")
    click.echo(f"{spec_file}: valid ({plan.strategy} on {plan.nodes} x {plan.instance.name})")


@main.command()
@spec_argument
@set_option
@output_option("text", "json")
@_guard
def plan(spec_file: str, overrides: tuple[str, ...], output: str) -> None:
    """Show every decision: instance and why, replicas, batch and LR maths, per-host launch, cost."""
    from smtrain.plan import build_plan
    from smtrain.render import dump, plan_text

    result = build_plan(_load(spec_file, overrides), _catalog(click.get_current_context()))
    if output == "json":
        dump(result.summary(), "json")
    else:
        click.echo(plan_text(result))


@main.command()
@spec_argument
@set_option
@click.option("--dry-run", is_flag=True, help="Print the exact CreateTrainingJob request; send nothing.")
@click.option("--job-name", help="Use this job name instead of <name>-<UTC time>-<4 hex>.")
@output_option("text", "json", "yaml")
@_guard
def submit(spec_file: str, overrides: tuple[str, ...], dry_run: bool, job_name: str | None, output: str) -> None:
    """Submit a training job (or, with --dry-run, show exactly what would be sent)."""
    from smtrain import submission
    from smtrain.plan import build_plan
    from smtrain.render import dump

    result = build_plan(_load(spec_file, overrides), _catalog(click.get_current_context()))
    if not dry_run:
        raise UserError("real submission is not available yet: use --dry-run", exit_codes.USAGE)
    rendered = submission.dry_run(result, job_name)
    dump(rendered, "yaml" if output == "yaml" else "json")


@main.command()
@click.option("--gpu", help="GPU model, e.g. A100, H100, V100, L4.")
@click.option("--gpus", type=click.IntRange(min=1), default=1, show_default=True, help="At least this many GPUs.")
@click.option("--min-gpu-memory", help="At least this much memory per GPU, e.g. 40GB.")
@output_option("text", "json")
@_guard
def instances(gpu: str | None, gpus: int, min_gpu_memory: str | None, output: str) -> None:
    """The GPU instance catalog with on-demand prices, cheapest first."""
    from smtrain.render import dump, instance_dict, instances_table

    catalog = _catalog(click.get_current_context())
    try:
        memory = parse_size(min_gpu_memory) if min_gpu_memory else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--min-gpu-memory") from None
    found = sorted(catalog.filter(gpu=gpu, min_gpus=gpus, min_gpu_memory=memory),
                   key=lambda i: (i.price_per_hour, i.name))
    if output == "json":
        dump({"price_source": catalog.price_source, "price_date": catalog.price_date,
              "instances": [instance_dict(i) for i in found]}, "json")
        return
    if not found:
        click.echo("no instance type matches", err=True)
        return
    instances_table(found, f"{len(found)} instance types; on-demand us-east-1 prices: {catalog.price_source} "
                           f"({catalog.price_date})")


@main.command()
def schema() -> None:
    """Print the JSON Schema of the job spec (for editors)."""
    from smtrain.render import dump

    dump(json_schema(), "json")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
