"""The Service Quotas check of `submit` (before the upload) and `plan --check`: lines, and exit 5 when
no choice of the plan fits (smtrain.sagemaker.quotas does the asking)."""

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
    from smtrain.api.submitting import check_quota_before_sending  # boto3: only when a check is asked for

    return check_quota_before_sending(plan, refuse=False)


def refuse_if_none_fits(report: QuotaCheck) -> None:
    """Exit 5 with the numbers and how to ask for more when every choice is known not to fit."""
    if report.refused:
        for note in report.notes:  # what could not be checked still matters to the person reading
            click.echo(mask_text(f"note: {note}"), err=True)
        raise UserError(report.refusal(), exit_codes.QUOTA)


def check_before_submit(plan: Plan) -> None:
    """submit's check, before anything is uploaded (smtrain.api's): silent when every choice fits; else each
    choice's line (which fit, what could not be told) on stderr, or the refusal."""
    report = check_quotas(plan)
    refuse_if_none_fits(report)
    if report.notes or any(f.fits is not True for f in report.fits):
        for line in report.lines():
            click.echo(mask_text(line), err=True)
