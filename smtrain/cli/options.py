"""The arguments and options several commands take, spelled once so that their help reads the same everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

spec_argument = click.argument("spec_file", metavar="SPEC", type=click.Path(dir_okay=False))
strict_option = click.option("--strict", is_flag=True,
                             help="Exit 2 when the preflight scan of your code finds anything (for CI); "
                                  "nothing is sent.")
timeout_option = click.option("--timeout", metavar="DURATION",
                              help="Give up waiting after this long (90s, 30m, 2h); exit 124, the job runs on.")
region_option = click.option("--region", help="AWS region of the job. [default: AWS_REGION / ~/.aws/config]")


def set_option(example: str = "compute.nodes=4") -> Callable[[F], F]:
    """--set FIELD=VALUE (repeatable), its help showing `example`."""
    return click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE",
                        help=f"Override a spec field, e.g. --set {example} (repeatable).")


def output_option(*choices: str) -> Callable[[F], F]:
    return click.option("--output", "-o", "output", type=click.Choice(choices), default=choices[0],
                        show_default=True, help="Output format.")
