"""A heterogeneous cluster (compute.instance_groups) from the catalog: each group's type, count and price,
the group the strategy runs on, and the group whose type picks the image.

The plan's one instance and node count are the distribution's group (SDK v2's `distribution` instance
group: its hosts run mpirun), else the group whose type picks the image; the cost is every group's. The
image follows SDK v2 (Framework._get_instance_type): the first group of a GPU family (g or p), else the
first group.

The catalog lists GPU types only, and a cluster's second group is usually CPUs (a c5 feeding the GPUs): a type
outside it of a family that is not a GPU one (g, p) is taken as a CPU type of unknown price, which the cost
leaves out and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from smtrain.plan.catalog import Catalog, CatalogError, InstanceType
from smtrain.plan.instance_choice import explicit_instance
from smtrain.spec.instance_groups import distribution_group
from smtrain.spec.model import LoadedSpec
from smtrain.spec.problems import SpecError


@dataclass(frozen=True)
class Group:
    """One group of the cluster: its name, the catalog's type and how many of it."""

    name: str
    instance: InstanceType
    count: int
    index: int  # its place in compute.instance_groups
    per_hour: float | None = None  # on-demand USD for the whole group; None: the catalog knows no price

    def summary(self) -> dict[str, Any]:
        """`plan -o json` key `instance_groups`: one per group, in the spec's order."""
        return {"name": self.name, "instance_type": self.instance.name, "count": self.count,
                "gpus_per_node": self.instance.gpus, "gpu": self.instance.gpu,
                "per_hour_usd": None if self.per_hour is None else round(self.per_hour, 4)}


def groups(loaded: LoadedSpec, catalog: Catalog) -> list[Group]:
    """compute.instance_groups from the catalog with their prices, every unknown type at its own line (empty:
    no groups)."""
    found, problems = [], []
    for index, entry in enumerate(loaded.spec.compute.instance_groups or ()):
        try:
            instance = _cpu_type(entry.instance_type, catalog)
            if instance is None:
                instance, _ = explicit_instance(catalog, entry.instance_type, loaded.region)
            price = catalog.price(instance, loaded.region).per_hour
            found.append(Group(entry.name, instance, entry.count, index,
                               None if price is None else price * entry.count))
        except CatalogError as exc:
            problems.append(loaded.problem(("compute", "instance_groups", index, "instance_type"), str(exc)))
    if problems:
        raise SpecError(problems)
    if found and not any(g.instance.gpus for g in found):
        # smtrain's images and checks are for GPU training: a cluster without a GPU group has no type to plan for.
        raise SpecError([loaded.problem(("compute", "instance_groups"), "no group has a GPU type of the catalog: a "
                                        "heterogeneous cluster in smtrain trains on one group of GPUs (`smtrain "
                                        "instances` lists them)")])
    return found


_TYPE = re.compile(r"ml\.([a-z][a-z0-9-]*)\.[a-z0-9]+")


def _gpu_family(instance: InstanceType) -> bool:
    found = _TYPE.fullmatch(instance.name)
    return found is not None and found[1][:1] in ("g", "p")


def _cpu_type(name: str, catalog: Catalog) -> InstanceType | None:
    """A CPU type the GPU catalog does not list (ml.c5.18xlarge), with no GPU and an unknown price; None for a
    catalog type or a name that is not such a type (the catalog's lookup then says what is wrong)."""
    found = _TYPE.fullmatch(name)
    if catalog.get(name) is not None or found is None or found[1][:1] in ("g", "p"):
        return None
    return InstanceType(name=name, family=found[1], gpu="", gpus=0, gpu_memory_mib=0, vcpus=None, memory=None,
                        efa=False, price_per_hour=None,
                        note="a CPU type outside the GPU catalog: its price is unknown to smtrain")


def image_group(found: list[Group]) -> Group:
    """The group whose type SDK v2 picks the image for: the first of a GPU family, else the first."""
    return next((g for g in found if _gpu_family(g.instance)), found[0])


def planned_group(loaded: LoadedSpec, found: list[Group]) -> tuple[Group, str]:
    """The group the plan's instance and nodes are, and why."""
    name = distribution_group(loaded.spec)
    chosen = next((g for g in found if g.name == name), None)
    if chosen is not None:
        return chosen, f"compute.instance_groups: {chosen.name}, the group {loaded.spec.distribution.strategy} spans"
    chosen = image_group(found)
    return chosen, (f"compute.instance_groups: {chosen.name} (SageMaker's image is for its type); every host of "
                    f"the {len(found)} group(s) runs your script once")
