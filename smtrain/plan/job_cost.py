"""What a job that ran cost: AWS's billable seconds at the catalog's on-demand price.

AWS documents BillableTimeInSeconds as wall-clock time per instance: the bill is it x InstanceCount x
the on-demand price. For managed spot it is the time after spot's saving, so the same product is what
spot cost, and (1 - BillableTimeInSeconds / TrainingTimeInSeconds) is the saving the console shows.
"""

from __future__ import annotations

from smtrain.jobs import JobCost, JobInfo
from smtrain.plan.catalog import Catalog


def _usd(seconds: int | None, per_hour: float | None, count: int) -> float | None:
    if seconds is None or per_hour is None:
        return None
    return round(seconds / 3600 * per_hour * count, 4)


def job_cost(job: JobInfo, catalog: Catalog) -> JobCost:
    """`job`'s cost from its billing facts; the parts AWS has not reported yet (a running job) are None."""
    count = job.instance_count or 1
    spot = bool(job.spot)
    instance = catalog.get(job.instance_type) if job.instance_type else None
    per_hour = region = note = None
    groups = job.extra.get("instance_groups") or []
    kind = job.instance_type
    if groups:
        # A heterogeneous cluster: every instance bills the same seconds, each at its own type's price.
        kind = ", ".join(f"{g['name']}: {g['count']} x {g['instance_type']}" for g in groups)
        count, found = 1, [(catalog.get(g["instance_type"]), g["count"] or 0) for g in groups]
        unknown = sorted({g["instance_type"] for g, (i, _) in zip(groups, found, strict=True) if i is None})
        if unknown:
            note = f"{', '.join(unknown)} not in the catalog: no price (add it with --catalog)"
        else:
            prices = [(catalog.price(i, job.region), n) for i, n in found if i is not None]
            if all(p.per_hour is not None for p, _ in prices):
                per_hour = sum(p.per_hour * n for p, n in prices)  # type: ignore[operator]
                region = prices[0][0].region
                note = next((p.region_note or p.note for p, _ in prices if p.region_note or p.note), None)
    elif instance is not None:
        price = catalog.price(instance, job.region)
        per_hour, region = price.per_hour, price.region
        note = price.region_note or price.note  # another region's figure, else the catalog's caveat
    elif job.instance_type:
        note = f"{job.instance_type} is not in the catalog: no price (add it with --catalog)"
    usd = _usd(job.billable_seconds, per_hour, count)
    on_demand = _usd(job.training_seconds if spot else job.billable_seconds, per_hour, count)
    saving_usd = round(on_demand - usd, 4) if spot and on_demand is not None and usd is not None else None
    saving_percent = None
    if spot and job.billable_seconds is not None and job.training_seconds:
        saving_percent = round((1 - job.billable_seconds / job.training_seconds) * 100, 1)
    return JobCost(billable_seconds=job.billable_seconds, training_seconds=job.training_seconds,
                   instance_type=kind, instance_count=count, spot=spot, price_per_hour=per_hour,
                   price_region=region, price_note=note, usd=usd, on_demand_usd=on_demand,
                   spot_saving_usd=saving_usd, spot_saving_percent=saving_percent, cluster=bool(groups))
