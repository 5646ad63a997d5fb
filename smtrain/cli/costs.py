"""What jobs cost, in `status` and `list --cost`, as text (the pricing is smtrain.api.listing's)."""

from __future__ import annotations

from smtrain.jobs import JobCost, JobInfo

LOCAL = "local: no charge"


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def _seconds(value: int) -> str:
    """3725 -> "3,725 s (1h 2m 5s)"."""
    hours, rest = divmod(value, 3600)
    parts = [f"{n}{unit}" for n, unit in ((hours, "h"), (rest // 60, "m"), (rest % 60, "s")) if n]
    return f"{value:,} s ({' '.join(parts)})" if value >= 60 else f"{value} s"


def _price(c: JobCost) -> str:
    notes = f" ({c.price_note})" if c.price_note else ""
    return f"{_usd(c.price_per_hour or 0)}/h on demand in {c.price_region}{notes}"


def cost_rows(job: JobInfo) -> list[tuple[str, str]]:
    """(label, value) rows of `status`: billable and training time, the cost, spot's saving."""
    if job.backend == "local":
        return [("cost", LOCAL)]
    c = job.cost
    if c is None:
        return []
    hosts = str(c.instance_type) if c.cluster else f"{c.instance_count} x {c.instance_type}"
    if c.billable_seconds is None:
        rate = f": {hosts} at {_price(c)}" if c.price_per_hour is not None else ""
        if job.done:
            return [("cost", f"unknown: SageMaker reported no billable time{rate}")]
        return [("cost", f"not known yet: SageMaker reports the billable time when the job ends{rate}")]
    rows = [("billable", f"{_seconds(c.billable_seconds)} per instance"
             + (f"; training {_seconds(c.training_seconds)}" if c.training_seconds is not None else ""))]
    if c.usd is None:
        return [*rows, ("cost", f"unknown: {c.price_note or 'no price for ' + str(c.instance_type)}")]
    rows.append(("cost", f"{_usd(c.usd)} = billable time x {hosts} at {_price(c)}"))
    if c.spot and c.spot_saving_usd is not None and c.on_demand_usd is not None:
        rows.append(("spot", f"saved {_usd(c.spot_saving_usd)} ({c.spot_saving_percent:g}%) against "
                             f"{_usd(c.on_demand_usd)} on demand for the training time"))
    return rows


def cost_cell(job: JobInfo) -> str:
    """`list --cost`'s column: "$1.23", "$0.40 spot -70%", "-" (not ended, or no price), "local: no charge"."""
    if job.backend == "local":
        return LOCAL
    c = job.cost
    if c is None or c.usd is None:
        return "-"
    if c.spot and c.spot_saving_percent is not None:
        return f"{_usd(c.usd)} spot -{c.spot_saving_percent:g}%"
    return _usd(c.usd)
