"""`smtrain import LAUNCHER [SPEC]` / `smtrain import --job NAME [SPEC]`: an SDK v2 launcher or an existing training
job written as a spec (smtrain.api.importing), and what was not carried over, each with where and why."""

from __future__ import annotations

from pathlib import Path

import click

from smtrain import exit_codes
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option, region_option
from smtrain.cli.shown_paths import shown_path as _shown
from smtrain.errors import UserError


@click.command(name="import")
@click.argument("launcher", metavar="[LAUNCHER]", required=False, type=click.Path(path_type=Path))
@click.argument("spec_file", metavar="[SPEC]", required=False, type=click.Path(path_type=Path))
@click.option("--job", "job", metavar="NAME", help="Import this training job (DescribeTrainingJob) instead of a "
              "launcher; SPEC defaults to NAME.yaml here.")
@click.option("--download-code", "code_dir", metavar="DIR", type=click.Path(path_type=Path),
              help="With --job: unpack the job's code here (a new directory; default NAME-code beside SPEC).")
@click.option("--force", is_flag=True, help="Replace SPEC if it exists.")
@region_option
@output_option("text", "json", "yaml")
@guard
def import_(launcher: Path | None, spec_file: Path | None, job: str | None, code_dir: Path | None, force: bool,
            region: str | None, output: str) -> None:
    """Write a job spec from a SageMaker SDK v2 launcher (a .py script or .ipynb notebook with TensorFlow(...) and
    .fit(...)), read without running it, or from an existing training job (--job NAME).

    Every argument maps to its spec field; each one that cannot (a value the launcher computes when it runs, an
    argument smtrain has no field for) is named with its line and why, in the output and in the spec's comments.
    SPEC defaults to job.yaml beside the launcher. Never replaces a file without --force.
    """
    import smtrain.api.importing as importing
    from smtrain.cli.render import dump

    if job is not None and launcher is not None:
        if spec_file is not None:
            raise click.UsageError("with --job NAME, name only the SPEC to write")
        spec_file, launcher = launcher, None  # `smtrain import --job NAME SPEC`: the one argument is the spec
    if (launcher is None) == (job is None):
        raise click.UsageError("name a LAUNCHER (.py or .ipynb) or --job NAME, not both" if launcher else
                               "Missing argument 'LAUNCHER' (or --job NAME).")
    if code_dir is not None and job is None:
        raise click.UsageError("--download-code is for --job: a launcher's code is where it names it")
    if job is not None:
        result = importing.import_job(job, spec_file, code_dir=code_dir, region=region, force=force)
        came_from = f"training job {job}"
    else:
        assert launcher is not None
        if region is not None:
            raise UserError("--region is for --job: a launcher's region is the one it runs in (the spec's region "
                            "field, else AWS_REGION)", exit_codes.USAGE)
        result = importing.import_launcher(launcher, spec_file, force=force)
        came_from = _shown(launcher)
    shown = _shown(result.spec_file)
    exports = " ".join(f"{v}=..." for v in result.variables)
    next_steps = [f"{'export ' + exports + '; ' if exports else ''}smtrain plan {shown}",
                  f"smtrain submit {shown} --dry-run"]
    if output != "text":
        dump({"spec_file": str(result.spec_file), "code_dir": str(result.code_dir) if result.code_dir else None,
              "not_carried_over": list(result.notes), "taken_from_defaults": list(result.taken),
              "variables": list(result.variables), "next": next_steps}, output)
        return
    click.echo(f"wrote {shown} from {came_from}" + (f" (code in {_shown(result.code_dir)})" if result.code_dir
                                                    else ""))
    if result.taken:
        click.echo("taken from the launcher's defaults (it may be run with others):")
        click.echo("\n".join(f"  {line}" for line in result.taken))
    if result.notes:
        click.echo("not carried over, or carried differently:")
        click.echo("\n".join(f"  {line}" for line in result.notes))
    if result.variables:
        click.echo(f"the spec reads {', '.join('${' + v + '}' for v in result.variables)} for what the launcher "
                   "looks up when it runs: export them or write the values")
    click.echo("next:\n" + "\n".join(f"  {step}" for step in next_steps))
