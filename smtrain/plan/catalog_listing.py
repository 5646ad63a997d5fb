"""What `smtrain instances` lists: the catalog filtered by GPU, count, memory and region, cheapest first."""

from __future__ import annotations

import math

from smtrain.plan.catalog import Catalog, CatalogError, InstanceType
from smtrain.plan.instance_choice import no_match_reason

__all__ = ["listing"]


def listing(
    catalog: Catalog,
    gpu: str | None,
    gpus: int,
    min_gpu_memory: int | None,
    region: str | None,
    memory_text: str | None = None,
) -> list[InstanceType]:
    """Matching types, cheapest first in `region`'s prices where the catalog has them (an unknown price
    last); without the types `region` is known not to offer (unknown offerings stay, marked by the
    caller). CatalogError naming the filters and what comes closest when nothing matches."""
    everywhere = catalog.filter(gpu=gpu, min_gpus=gpus, min_gpu_memory=min_gpu_memory)
    found = [i for i in everywhere if i.offered_in(region) is not False]
    if not found:
        filters = " ".join(f"{flag} {value}" for flag, value in
                           (("--gpu", gpu), ("--gpus", gpus if gpus != 1 else None),
                            ("--min-gpu-memory", memory_text), ("--region", region)) if value is not None)
        if not everywhere:
            why = no_match_reason(catalog, gpu, gpus, min_gpu_memory)
        else:
            offered = sorted({r for i in everywhere for r in (i.regions or ())})
            why = (f"none of the {len(everywhere)} matching types is offered in {region}; they are offered in "
                   f"{', '.join(offered)}" + (f" (regions: {catalog.regions_source})" if catalog.regions_source else ""))
        raise CatalogError(f"no instance type matches {filters}: {why}")

    def cheapest(i: InstanceType) -> tuple[float, int, int, str]:
        # Equal (or unknown) prices: smaller first, so a family's sizes read in order.
        per_hour = catalog.price(i, region).per_hour
        return (math.inf if per_hour is None else per_hour, i.gpus, i.vcpus or 0, i.name)

    return sorted(found, key=cheapest)
