"""The spec's own commands: `validate` (the spec checked, exit 2 with every problem), `plan` (every decision,
nothing sent) and `schema` (the spec's JSON Schema for editors)."""


from __future__ import annotations

import click

from smtrain import exit_codes
from smtrain.cli import steps
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option, set_option, spec_argument, strict_option


@click.command()
@spec_argument
@set_option()
@strict_option
@output_option("text", "json", "yaml")
@guard
def validate(spec_file: str, overrides: tuple[str, ...], strict: bool, output: str) -> None:
    """Check a job spec: every problem, with file:line:column, and the preflight scan of your own
    script. No AWS, no TensorFlow."""
    from smtrain.api.validation import validate as validate_spec
    from smtrain.cli.render import dump, echo_problems, problem_dict, valid_text
    from smtrain.render.request_limits import local_only_problems

    ctx = click.get_current_context()
    checked = validate_spec(spec_file, steps.every_override(overrides), catalog=lambda: steps.catalog(ctx))
    problems, plan, findings = checked.problems, checked.plan, checked.findings
    errors = [f for f in findings if f.is_error]
    if problems or errors or plan is None:
        if output != "text":
            dump({"valid": False, "problems": [problem_dict(p) for p in problems],
                  "warnings": [problem_dict(w) for w in checked.warnings],
                  "preflight": [f.to_dict() for f in findings], "skipped": checked.skipped}, output)
            click.get_current_context().exit(exit_codes.USAGE)
        echo_problems(problems)
        echo_problems(checked.warnings, label="warning")
        steps.echo_findings(findings)
        for note in checked.skipped:
            click.echo(f"note: {note}", err=True)
        found = [f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"] if problems else []
        if errors:
            found.append(f"{len(errors)} preflight error{'s' if len(errors) != 1 else ''}")
        click.echo(f"{' and '.join(found)} found; nothing was sent.", err=True)
        click.get_current_context().exit(exit_codes.USAGE)
    local = local_only_problems(plan)  # inputs/output on this machine: valid for --local only
    if output != "text":
        dump({"valid": True, "local_only": bool(local), "local_only_fields": [problem_dict(p) for p in local],
              "problems": [], "warnings": [problem_dict(w) for w in checked.warnings],
              "preflight": [f.to_dict() for f in findings]}, output)
        steps.strict_exit(findings, strict)
        return
    echo_problems(checked.warnings, label="warning")
    echo_problems(local, label="local only")
    steps.echo_findings(findings)
    steps.strict_exit(findings, strict)
    click.echo(valid_text(spec_file, plan, local))


@click.command()
@spec_argument
@set_option()
@strict_option
@click.option("--check", is_flag=True,
              help="Also ask AWS (Service Quotas) whether the account's quota fits each instance choice; "
                   "exit 5 when none does.")
@output_option("text", "json", "yaml")
@guard
def plan(spec_file: str, overrides: tuple[str, ...], strict: bool, check: bool, output: str) -> None:
    """Show every decision: instance and why, replicas, batch and LR maths, per-host launch, cost."""
    from smtrain.cli.render import dump, plan_text

    found = steps.plan_spec(spec_file, overrides)
    result, tuning, findings = found.plan, found.tuning, found.findings
    quotas = None
    if check:  # the only part of plan that goes online
        from smtrain.cli.quota_check import check_quotas

        quotas = check_quotas(result)
    if output != "text":
        summary = found.summary()
        if quotas is not None:
            summary["quotas"] = quotas.to_dict()
        dump(summary, output)
    else:
        click.echo(plan_text(result, found.code.warnings, found.code.own_strategies))
        if tuning is not None:
            from smtrain.cli.tuning_render import tuning_lines

            click.echo("\n".join(tuning_lines(tuning.summary())))
        steps.echo_findings(findings)
        if quotas is not None and not quotas.refused:
            click.echo("\n".join(quotas.lines()))
    steps.strict_exit(findings, strict)
    if quotas is not None:
        from smtrain.cli.quota_check import refuse_if_none_fits

        refuse_if_none_fits(quotas)


@click.command()
@output_option("json", "yaml")
def schema(output: str) -> None:
    """Print the JSON Schema of the job spec (for editors)."""
    from smtrain.cli.render import dump
    from smtrain.spec.model import json_schema

    dump(json_schema(), output, mask=False)
