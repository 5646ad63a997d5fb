"""`smtrain instances`: the GPU instance catalog, with prices and regions, filtered."""


from __future__ import annotations

import click

from smtrain.cli import steps
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option
from smtrain.spec.units import parse_size


@click.command()
@click.option("--gpu", help="GPU model, e.g. A100, H100, V100, L4.")
@click.option("--gpus", type=click.IntRange(min=1), default=1, show_default=True, help="At least this many GPUs.")
@click.option("--min-gpu-memory", help="At least this much memory per GPU, e.g. 40GB.")
@click.option("--region", help="Only types this region offers for training (and its prices where known).")
@output_option("text", "json", "yaml")
@guard
def instances(gpu: str | None, gpus: int, min_gpu_memory: str | None, region: str | None, output: str) -> None:
    """The GPU instance catalog with on-demand prices, cheapest first ("?" where a fact is unknown)."""
    from smtrain.cli.render import dump, instance_dict, instances_table
    from smtrain.plan.catalog_listing import listing
    from smtrain.spec import patterns

    catalog = steps.catalog(click.get_current_context())
    try:
        memory = parse_size(min_gpu_memory) if min_gpu_memory else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--min-gpu-memory") from None
    if region is not None and not patterns.REGION.matches(region):
        raise click.BadParameter(f"{region!r} is not an AWS region name, e.g. eu-west-1", param_hint="--region")
    found = listing(catalog, gpu, gpus, memory, region, min_gpu_memory)  # CatalogError when nothing matches
    if output != "text":
        dump({"price_source": catalog.price_source, "price_date": catalog.price_date,
              "price_region": catalog.region, "region": region, "regions_source": catalog.regions_source,
              "excluded": dict(catalog.excluded),
              "instances": [instance_dict(i, catalog.price(i, region), region) for i in found]}, output)
        return
    where = f" for {region}" if region else ""
    instances_table(found, [catalog.price(i, region) for i in found], region,
                    f"{len(found)} instance types{where}; on-demand {catalog.region} prices: {catalog.price_source} "
                    f"({catalog.price_date})")
