"""The `smtrain` group: its global options (--debug, --catalog, --prices, --set, --version), `completion`, and
the commands, one module per group (smtrain.cli's map): each parses, calls the library, prints, exits."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import click

from smtrain.cli.check_command import check
from smtrain.cli.debug_command import debug
from smtrain.cli.guard import GuardedGroup
from smtrain.cli.import_command import import_
from smtrain.cli.init_command import init
from smtrain.cli.instances_command import instances
from smtrain.cli.job_commands import list_, logs, status, stop, wait
from smtrain.cli.metrics_command import metrics
from smtrain.cli.spec_commands import plan, schema, validate
from smtrain.cli.submit_command import submit
from smtrain.cli.tensorboard_command import tensorboard
from smtrain.cli.tune_command import tune
from smtrain.errors import raise_terminated


@click.group(cls=GuardedGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--debug", is_flag=True, help="Show Python tracebacks for unexpected errors.")
@click.option("--catalog", type=click.Path(dir_okay=False, path_type=Path), envvar="SMTRAIN_CATALOG",
              help="Your own instance catalog (YAML), merged over the bundled one. [env SMTRAIN_CATALOG]")
@click.option("--prices", type=click.Path(dir_okay=False, path_type=Path), envvar="SMTRAIN_PRICES",
              help="A YAML/JSON map of instance type -> hourly price overriding the catalog's. "
                   "[env SMTRAIN_PRICES]")
@click.option("--set", "early_overrides", multiple=True, metavar="FIELD=VALUE",
              help="Override a spec field for the command that reads a spec (as its own --set).")
@click.version_option(package_name="smtrain")
def main(debug: bool, catalog: Path | None, prices: Path | None, early_overrides: tuple[str, ...]) -> None:
    """Launch TensorFlow training jobs on Amazon SageMaker GPUs from a YAML job spec.

    Exit codes: 0 ok/Completed, 1 Failed, 2 invalid spec or usage, 3 Stopped,
    4 AWS/API error or unknown job, 5 the job does not fit the account's quota (nothing sent),
    70 internal error (a bug: rerun with --debug),
    124 wait timed out, 130 interrupted, 141 stdout closed by its reader, 143 SIGTERM.
    """
    # SIGTERM is an interrupt, as Ctrl-C is: what cleans up after one cleans up after the other
    # (smtrain.errors.Terminated; the guard says "interrupted" and exits 143).
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, raise_terminated)


@main.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script, e.g. `eval "$(smtrain completion bash)"` in ~/.bashrc."""
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    assert completer is not None  # click knows every choice above
    click.echo(completer(main, {}, "smtrain", "_SMTRAIN_COMPLETE").source())


for command in (validate, plan, schema, submit, status, list_, logs, wait, stop, tensorboard, instances, init,
                metrics, tune, check, import_, debug):
    main.add_command(command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
