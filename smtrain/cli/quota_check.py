"""The Service Quotas check of `submit` and `tune` (before the upload) and `plan --check`, for people: its lines,
and exit 5 when no choice of the plan fits (smtrain.api.submitting asks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.redact import mask_text

if TYPE_CHECKING:
    from smtrain.plan.build import Plan
    from smtrain.sagemaker.quotas import QuotaCheck


def check_quotas(plan: Plan) -> QuotaCheck:
    from smtrain.api.submitting import check_quotas as ask  # boto3: only when a check is asked for

    return ask(plan)


def refuse_if_none_fits(report: QuotaCheck) -> None:
    """Exit 5 with the numbers and how to ask for more when every choice is known not to fit."""
    if report.refused:
        for note in report.notes:  # what could not be checked still matters to the person reading
            click.echo(mask_text(f"note: {note}"), err=True)
        raise UserError(report.refusal(), exit_codes.QUOTA)


def show_before_submit(report: QuotaCheck) -> None:
    """submit's and tune's check, before anything is uploaded (the library refuses after this): silent when
    every choice fits; else each choice's line (which fit, what could not be told) on stderr, or, when none
    fits, what could not be checked."""
    if report.refused:
        for note in report.notes:
            click.echo(mask_text(f"note: {note}"), err=True)
    elif report.notes or any(f.fits is not True for f in report.fits):
        for line in report.lines():
            click.echo(mask_text(line), err=True)
