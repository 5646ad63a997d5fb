"""`smtrain check SPEC`: the job's first steps on one device and in the planned layout, compared (smtrain.check).

Exit 0 equivalent, 1 not equivalent, 2 bad input or a job that cannot be checked (the reason says what
would make it checkable). `submit --check` runs the same first (cli.submit_command).
"""

from __future__ import annotations

import sys

import click

from smtrain.api.checking import DEFAULT_STEPS, RANDOM_LAYER_CHOICES, CheckResult
from smtrain.cli import steps
from smtrain.cli.check_render import check_text
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option, set_option, spec_argument

data_option = click.option("--data", "data", multiple=True, metavar="CHANNEL=PATH",
                           help="A local sample for an input channel (repeatable); needed for s3:// channels.")
steps_option = click.option("--check-steps", "check_steps", type=click.IntRange(min=1),
                            default=DEFAULT_STEPS, show_default=True, help="Steps to compare.")
random_option = click.option("--random-layers", type=click.Choice(RANDOM_LAYER_CHOICES), default="on",
                             show_default=True,
                             help="off: dropout and noise layers do nothing in both runs, to compare the rest.")


def run_check(spec_file: str, overrides: tuple[str, ...], data: tuple[str, ...], check_steps: int,
              random_layers: str, python: str | None = None) -> CheckResult:
    """smtrain.check for the command's spec (every --set, the group's catalog); progress on stderr."""
    import smtrain as api

    return api.check(spec_file, steps.every_override(overrides), data=data, steps=check_steps,
                     random_layers=random_layers, python=python, catalog=steps.catalog(click.get_current_context()),
                     progress=lambda line: click.echo(line, err=True))


def show(result: CheckResult, output: str, *, err: bool = False) -> None:
    from smtrain.cli.render import dump

    if output == "text":
        click.echo(check_text(result), err=err)
    else:
        dump(result.to_dict(), output)


@click.command()
@spec_argument
@set_option()
@data_option
@steps_option
@random_option
@click.option("--python", "python_", type=click.Path(dir_okay=False, exists=True), metavar="PATH",
              help="The Python that runs the hosts (default: this one).")
@output_option("text", "json", "yaml")
@guard
def check(spec_file: str, overrides: tuple[str, ...], data: tuple[str, ...], check_steps: int, random_layers: str,
          python_: str | None, output: str) -> None:
    """Check before you pay: the planned distributed run trains as one device would.

    Runs the job's own code here twice for its first steps, on one device with the planned global
    batch and learning rate and in the planned layout (hosts as processes, CPU devices as replicas),
    and compares each step's loss and the weights after. Exit 0 equivalent, 1 not, 2 bad input.
    """
    result = run_check(spec_file, overrides, data, check_steps, random_layers, python_)
    show(result, output)
    sys.exit(result.exit_code)


