"""`smtrain tensorboard JOB`: a job's event files fetched and TensorBoard started on them."""


from __future__ import annotations

from pathlib import Path

import click

from smtrain import exit_codes
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option, region_option
from smtrain.errors import UserError
from smtrain.redact import mask_text


@click.command()
@click.argument("job")
@region_option
@click.option("--dir", "directory", type=click.Path(file_okay=False, resolve_path=True, path_type=Path), metavar="DIR",
              help="Download a SageMaker job's event files here: a new or empty directory, or one smtrain "
                   "downloaded into before. [default: $XDG_CACHE_HOME or ~/.cache, smtrain/tensorboard/JOB]")
@click.option("--no-launch", is_flag=True, help="Fetch the event files and say where they are; start nothing.")
@output_option("text", "json", "yaml")
@guard
def tensorboard(job: str, region: str | None, directory: Path | None, no_launch: bool, output: str) -> None:
    """Show a job's TensorBoard event files: a local job's where its chief host wrote them, a SageMaker
    job's downloaded from S3. Then, in text mode, start `tensorboard --logdir` on them when TensorBoard
    is installed (`pip install 'smtrain[tensorboard]'`) and exit with its code.

    Only event files (events.out.tfevents.*) are downloaded, and no file smtrain did not write is
    replaced: a --dir holding other files is refused (exit 2). Exits 4 when the job has no event files
    (yet), as for an unknown job.
    """
    import shlex

    from smtrain.api.backends import backend_for_job
    from smtrain.cli.render import dump, event_files_text, no_event_files
    from smtrain.cli.tensorboard_program import run, tensorboard_command

    found = backend_for_job(job, region).event_files(job, directory)  # the name checked there
    for note in found.notes:  # what was left out, before the outcome: it may be why nothing is there
        click.echo(mask_text(f"note: {note}"), err=True)
    if directory is not None and found.source == "local":
        click.echo("note: --dir is for SageMaker jobs; a local job's event files are read where they are", err=True)
    if not found.files:
        raise UserError(no_event_files(found), exit_codes.API)
    command = tensorboard_command(found.logdir)
    shown = shlex.join(command) if command else None
    if output != "text":
        dump(found.to_dict(shown), output)
        return
    click.echo(event_files_text(found, shown, launching=not no_launch))
    if command is not None and not no_launch:
        click.get_current_context().exit(run(command))
