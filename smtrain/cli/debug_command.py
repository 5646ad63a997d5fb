"""`smtrain debug JOB [--host algo-2]`: a shell on a running host of a SageMaker job with remote debug on, through
AWS Systems Manager: the `aws ssm start-session` command, run when the AWS CLI and its Session Manager plugin
are here, else printed with what is missing."""

from __future__ import annotations

import os
import shlex
import shutil

import click

from smtrain import exit_codes
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option, region_option
from smtrain.errors import UserError

PLUGIN = "session-manager-plugin"


@click.command(name="debug")
@click.argument("job")
@click.option("--host", default="algo-1", show_default=True, help="The host to open a shell on.")
@click.option("--print", "print_only", is_flag=True, help="Print the command, never run it.")
@region_option
@output_option("text", "json", "yaml")
@guard
def debug(job: str, host: str, print_only: bool, region: str | None, output: str) -> None:
    """Open a shell on a running host of JOB (started with compute.remote_debug: true) through AWS Systems
    Manager: runs `aws ssm start-session` when the AWS CLI and its Session Manager plugin are installed,
    else prints it. Exit 2 when the job has remote debug off, is not running, or has no such host.
    """
    from smtrain.api.backends import backend_for_job, local_module, sagemaker_backend
    from smtrain.cli.render import dump
    from smtrain.sagemaker.remote_debug import debug_command

    local = local_module()
    if local is not None and isinstance(backend_for_job(job, region), local.LocalBackend):
        raise UserError(f"{job} is a local run: its hosts are processes on this machine (smtrain status {job} "
                        "names their logs); smtrain debug opens a shell on a SageMaker host", exit_codes.USAGE)
    backend = sagemaker_backend(region)
    command = debug_command(backend.description(job), host, backend.region)
    missing = [tool for tool in ("aws", PLUGIN) if shutil.which(tool) is None]
    shown = shlex.join(command)
    if output != "text":
        dump({"job": job, "host": host, "command": command, "missing": missing}, output)
        return
    if print_only or missing:
        if missing and not print_only:
            click.echo(f"to run it, install {' and '.join(missing)} (AWS CLI v2 and its Session Manager plugin)",
                       err=True)
        click.echo(shown)
        return
    click.echo(f"$ {shown}", err=True)
    os.execvp(command[0], command)  # the shell is the AWS CLI's from here on, as if typed
