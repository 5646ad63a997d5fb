"""`smtrain init`: a spec for a script of yours (or an example, --example NAME) and what to do next."""


from __future__ import annotations

from pathlib import Path

import click

from smtrain import exit_codes
from smtrain.cli import steps
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option
from smtrain.cli.shown_paths import shown_path as _shown
from smtrain.errors import UserError


def _newest_tf_version(region: str | None) -> str:
    """The version a spec gets by default (the newest image AWS patches, as users write it: "2.21") where
    `region` has it; else the newest there is a training image for there."""
    from smtrain.plan.distribution import version_tuple
    from smtrain.plan.tf_image_choice import default_version
    from smtrain.plan.tf_images import image_regions as table_regions
    from smtrain.plan.tf_versions import image_regions, known_tf_versions

    if region is None or region in table_regions():
        return default_version()
    short = sorted((v for v in known_tf_versions() if v.count(".") == 1), key=version_tuple, reverse=True)
    return next((v for v in short if region in image_regions(v)), short[0])


def _init_example(name: str, force: bool, output: str) -> None:
    from smtrain.cli import examples
    from smtrain.cli.render import dump

    if name == "list":
        listed = {n: examples.summary(n) for n in examples.names()}
        if output != "text":
            dump({"examples": listed}, output)
        else:
            click.echo("\n".join(f"{n:<22} {what}" for n, what in listed.items()))
        return
    written = examples.write_example(name, Path.cwd(), force=force)
    if output != "text":
        dump({"spec_file": str(written.spec), "files": [str(f) for f in written.files]}, output)
        return
    click.echo(f"wrote {', '.join(_shown(f) for f in written.files)}")
    data = examples.demo_data_command(name)
    click.echo(f"next: smtrain plan {_shown(written.spec)}" + (f"; to run it here: {data}, then smtrain submit "
                                                               f"{_shown(written.spec)} --local" if data else ""))


@click.command()
@click.argument("script", required=False, type=click.Path(dir_okay=True, path_type=Path))
@click.argument("spec_file", metavar="[SPEC]", required=False, type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace SPEC if it exists.")
@click.option("--example", metavar="NAME", help="Write example NAME (configs/NAME.yaml and its code) here instead; "
              "--example list names them.")
@output_option("text", "json", "yaml")
@guard
def init(script: Path | None, spec_file: Path | None, force: bool, example: str | None, output: str) -> None:
    """Write a starting job spec for your script (default: job.yaml beside it), then validate it.

    The options the script's argparse declares become hyperparameters with their defaults; the script
    runs unchanged, wrapped in the strategy smtrain picks. Never replaces a file without --force.
    `smtrain init --example local-demo` writes one of the tested example specs instead.
    """
    if example is not None:
        if script is not None:
            raise click.UsageError("--example writes an example spec: not with SCRIPT")
        _init_example(example, force, output)
        return
    if script is None:
        raise click.UsageError("Missing argument 'SCRIPT' (or --example NAME).")
    import smtrain as api  # the library's names (smtrain.api.*), imported as they are used
    from smtrain.aws import default_region
    from smtrain.cli.render import dump
    from smtrain.spec import patterns
    from smtrain.spec.starter import hyperparameters, notebook_refusal, read_script, starter_text

    if not script.is_file():
        raise UserError(f"{script}: no such file" if not script.exists() else f"{script}: not a file",
                        exit_codes.USAGE)
    if script.suffix not in (".py", ".ipynb"):
        raise UserError(f"{script}: not a Python script (.py) or notebook (.ipynb): smtrain init reads a script's "
                        "argparse options", exit_codes.USAGE)
    refusal = notebook_refusal(script, _shown(script))  # before anything is written: a rerun needs no --force
    if refusal is not None:
        raise UserError(refusal, exit_codes.USAGE)
    target = spec_file if spec_file is not None else script.parent / "job.yaml"
    if (target.exists() or target.is_symlink()) and not force:
        raise UserError(f"{target} exists: pass --force to replace it, or name another file "
                        f"(smtrain init {_shown(script)} other.yaml)", exit_codes.USAGE)
    if target.is_dir():
        raise UserError(f"{target} is a directory: name the spec file to write", exit_codes.USAGE)
    facts = read_script(script)
    region = default_region()
    region = region if region and patterns.REGION.matches(region) else "us-east-1"
    text = starter_text(script, target, facts, tf_version=_newest_tf_version(region), region=region)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {target}: {exc.strerror or exc}", exit_codes.USAGE) from None
    # Checked as `validate` checks it: a starting spec that does not validate is a bug of init's.
    found = api.plan(target, catalog=steps.catalog(click.get_current_context()))
    loaded, plan, warnings, findings = found.loaded, found.plan, found.code.warnings, found.findings
    shown = _shown(target)
    next_steps = [f"smtrain plan {shown}", f"smtrain submit {shown} --dry-run", f"smtrain submit {shown} --local"]
    errors = sum(f.is_error for f in findings)  # what the script does that no spec can make run
    if output != "text":
        dump({"spec_file": str(target), "script": str(script), "valid": not errors,
              "hyperparameters": hyperparameters(facts.args).values,
              "warnings": [w.render() for w in plan.warnings + warnings],
              "preflight": [f.to_dict() for f in findings], "next": next_steps}, output)
        if errors:
            click.get_current_context().exit(exit_codes.USAGE)
        return
    from smtrain.cli.render import echo_problems, valid_text

    echo_problems(plan.warnings + warnings, label="warning")
    steps.echo_findings(findings)
    click.echo(f"wrote {shown} for {_shown(script)}")
    if errors:
        click.echo(f"{shown} cannot run {_shown(script)} as it is: fix the {errors} preflight "
                   f"error{'s' if errors != 1 else ''} above in the script, then: smtrain validate {shown}", err=True)
        click.get_current_context().exit(exit_codes.USAGE)
    click.echo(valid_text(shown, plan))
    click.echo(f"Replace the placeholders in {shown} (role, output{', inputs' if loaded.spec.inputs else ''}), "
               "then:")
    click.echo("\n".join(f"  {step}" for step in next_steps))
