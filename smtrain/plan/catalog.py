"""The GPU instance catalog's data model: an instance type and its facts, prices per region, the catalog
itself (lookup, filters, "did you mean"), CatalogError, and what a type offers in a region (availability).

catalog_files.py reads the data files into a Catalog; instance_choice.py picks a type from one. This module is
on the start-up path of `validate`, `plan` and `instances`: it must never import sagemaker, boto3 or tensorflow.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.plan import gpu_facts
from smtrain.spec.problems import brief

__all__ = [
    "MIB",
    "Availability",
    "Catalog",
    "CatalogError",
    "InstanceType",
    "Price",
    "RegionPrice",
    "availability",
    "gib_text",
    "gpu_key",
    "region_error",
    "resolve_instance",
    "split_name",
]

MIB = 2**20


@dataclass(frozen=True)
class RegionPrice:
    """An on-demand price for a region other than the catalog's own."""

    region: str
    per_hour: float
    note: str | None = None


@dataclass(frozen=True)
class InstanceType:
    name: str  # "ml.p4d.24xlarge"
    family: str  # "p4d"
    gpu: str  # "A100"
    gpus: int
    # MiB per GPU, as the SageMaker SDK's instance_types_gpu_info and EC2 list it: a maker's
    # "40GB" A100 is 40960 MiB (42.9 decimal GB).
    gpu_memory_mib: int
    vcpus: int | None  # None: unknown (see `note`)
    memory: int | None  # bytes of host memory; None: unknown
    efa: bool
    price_per_hour: float | None  # USD on-demand in the catalog's region; None: unknown, never picked
    price_note: str | None = None  # why this price is weaker than the catalog's source, if it is
    region_prices: tuple[RegionPrice, ...] = ()  # other regions, only where a source gives them
    note: str | None = None  # where the entry's facts come from, or why one is unknown
    # Regions that offer the type for training; None: unknown. `regions_scope` is the set of regions
    # the list speaks for (its source's); outside it, whether a region offers the type is unknown.
    regions: tuple[str, ...] | None = None
    regions_scope: tuple[str, ...] | None = None

    @property
    def price_known(self) -> bool:
        return self.price_per_hour is not None

    def offered_in(self, region: str | None) -> bool | None:
        """Whether `region` offers this type for training: True, False, or None when unknown."""
        if region is None or self.regions is None:
            return None
        if region in self.regions:
            return True
        if self.regions_scope is not None and region not in self.regions_scope:
            return None
        return False

    @property
    def compute_capability(self) -> tuple[int, int] | None:
        return gpu_facts.compute_capability(self.gpu)

    @property
    def tensorflow_drives(self) -> bool | None:
        """Whether SageMaker's TensorFlow images can drive this type's GPU (False: Blackwell); None: unknown."""
        return gpu_facts.tensorflow_drives(self.gpu)

    @property
    def tensorflow_note(self) -> str | None:
        return gpu_facts.tensorflow_note(self.gpu)

    @property
    def gpu_memory(self) -> int:
        """Bytes per GPU."""
        return self.gpu_memory_mib * MIB

    @property
    def total_gpu_memory(self) -> int:
        return self.gpus * self.gpu_memory

    @property
    def price_is_estimate(self) -> bool:
        return _is_estimate(self.price_note)

    def meets_gpu_memory(self, min_bytes: int) -> bool:
        """Whether each GPU holds at least `min_bytes`, compared in whole MiB with the request rounded
        down: EC2 lists a "24GB" card as 24*10^9 bytes rounded down to MiB (22888), and asking for
        24GB must still find it."""
        return self.gpu_memory_mib >= min_bytes // MIB


@dataclass(frozen=True)
class Price:
    """What one instance costs per hour in a region, and how far to trust the figure."""

    per_hour: float | None  # None: no source gives this type's price
    region: str  # the region this figure is for
    note: str | None = None  # the catalog's note on this figure
    asked_region: str | None = None  # the region wanted, when it differs from `region`

    @property
    def is_estimate(self) -> bool:
        return _is_estimate(self.note)

    @property
    def known(self) -> bool:
        return self.per_hour is not None

    @property
    def region_note(self) -> str | None:
        """Says so when the figure is another region's: "price for us-east-1; eu-west-1 unknown"."""
        if self.per_hour is None or self.asked_region is None or self.asked_region == self.region:
            return None  # no figure at all: the price note says why, and no region's figure stands in
        return f"price for {self.region}; {self.asked_region} unknown"


def _is_estimate(note: str | None) -> bool:
    # The catalog's convention (data/instances.yaml): a price_note that calls the price an estimate.
    return note is not None and "estimate" in note.lower()


class CatalogError(UserError, ValueError):
    """A catalog that cannot be read, or a request it cannot meet. The message is for the user (exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_codes.USAGE)


@dataclass(frozen=True)
class Catalog:
    instances: tuple[InstanceType, ...]
    price_source: str
    price_date: str
    spot_discount_estimate: float
    region: str = "us-east-1"  # the region of every entry's `price_per_hour`
    notes: tuple[str, ...] = ()  # what loading a user's file converted, for the user to see
    # Training types deliberately left out, each with its reason (e.g. ml.p2.*: K80).
    excluded: Mapping[str, str] = field(default_factory=dict)
    regions_source: str | None = None  # where the entries' `regions` come from
    _by_name: dict[str, InstanceType] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A frozen dataclass still needs a name index; build it once here.
        object.__setattr__(self, "_by_name", {i.name: i for i in self.instances})

    def __len__(self) -> int:
        return len(self.instances)

    def __iter__(self) -> Iterator[InstanceType]:
        return iter(self.instances)

    def get(self, name: str) -> InstanceType | None:
        """The entry called exactly `name` ("ml.p4d.24xlarge"), or None."""
        return self._by_name.get(name.strip())

    def names(self) -> list[str]:
        return [i.name for i in self.instances]

    def gpu_models(self) -> list[str]:
        """The GPU models in the catalog, in the order they first appear."""
        return list(dict.fromkeys(i.gpu for i in self.instances))

    def price(self, instance: InstanceType, region: str | None = None) -> Price:
        """The hourly price in `region`: its own figure where the catalog has one, else the catalog
        region's, which then says the wanted region's price is unknown."""
        for regional in instance.region_prices:
            if regional.region == region:
                return Price(regional.per_hour, regional.region, regional.note)
        return Price(instance.price_per_hour, self.region, instance.price_note, region)

    def spot_price(self, instance: InstanceType) -> float | None:
        """A rough managed-spot hourly price: on-demand less the catalog's discount estimate (None: unknown)."""
        if instance.price_per_hour is None:
            return None
        return instance.price_per_hour * (1.0 - self.spot_discount_estimate)

    def nearest(self, name: str, n: int = 3) -> list[str]:
        """Up to `n` catalog names closest to `name`, best first, for a "did you mean" line."""
        return _nearest(self.names(), name, n)

    def filter(
        self,
        gpu: str | None = None,
        min_gpus: int = 1,
        min_gpu_memory: int | None = None,
        allowed: Collection[str] | None = None,
        region: str | None = None,
    ) -> list[InstanceType]:
        """Entries with this GPU model (any case), at least `min_gpus` GPUs and at least
        `min_gpu_memory` bytes per GPU (see InstanceType.meets_gpu_memory), limited to `allowed`
        names when given and to types not known to be missing from `region`; catalog order."""
        want = gpu_key(gpu) if gpu else None
        allowed_set = set(allowed) if allowed is not None else None
        return [
            i
            for i in self.instances
            if (want is None or gpu_key(i.gpu) == want)
            and i.gpus >= min_gpus
            and (min_gpu_memory is None or i.meets_gpu_memory(min_gpu_memory))
            and (allowed_set is None or i.name in allowed_set)
            and i.offered_in(region) is not False
        ]


def resolve_instance(catalog: Catalog, name: str) -> InstanceType:
    """The catalog entry for an instance type the user named, or a CatalogError with suggestions."""
    found = catalog.get(name)
    if found is not None:
        return found
    if name.strip() in catalog.excluded:
        raise CatalogError(f"{name.strip()} is left out of the GPU catalog: {catalog.excluded[name.strip()]}")
    suggestions = catalog.nearest(name)
    hint = (
        f"; nearest: {', '.join(suggestions)}" if suggestions else "; `smtrain instances` lists the catalog"
    )
    raise CatalogError(f"unknown instance type {brief(name.strip(), 80)} (not in the GPU catalog){hint}")


def region_error(catalog: Catalog, instance: InstanceType, region: str | None) -> str | None:
    """The error for a type `region` is known not to offer for training, naming the regions that do;
    None when it is offered there or nobody knows."""
    if instance.offered_in(region) is not False:
        return None
    where = ", ".join(instance.regions or ()) or "none"
    source = f" (regions: {catalog.regions_source})" if catalog.regions_source else ""
    return (f"{instance.name} is not offered for training in {region}; regions that offer it: {where}{source}. "
            "Choose another region or instance type, or give the type's regions in a --catalog file")


@dataclass(frozen=True)
class Availability:
    """Whether one instance type can be used for a TensorFlow training job in a region."""

    name: str
    in_catalog: bool
    excluded: str | None  # the exclusion list's reason, for a type deliberately left out
    offered: bool | None  # in the region asked about; None: unknown (never an error)
    regions: tuple[str, ...] | None  # where it is offered; None: unknown
    tensorflow: bool | None  # whether SageMaker's TensorFlow images drive its GPU; None: unknown
    notes: tuple[str, ...] = ()
    problem: str | None = None  # why it cannot be used there at all (not in catalog, excluded, not offered)


def availability(catalog: Catalog, name: str, region: str | None) -> Availability:
    """Everything the catalog knows about using `name` in `region`: for fallback lists (compute.prefer)
    and anything else that must vet a type it did not pick itself."""
    name = name.strip()
    instance = catalog.get(name)
    if instance is None:
        try:
            resolve_instance(catalog, name)
        except CatalogError as exc:
            problem = str(exc)
        return Availability(name, False, catalog.excluded.get(name), None, None, None, (), problem)
    notes = []
    offered = instance.offered_in(region)
    if region is not None and offered is None:
        notes.append(f"whether {region} offers {name} for training is unknown")
    if instance.tensorflow_note:
        notes.append(instance.tensorflow_note)
    if not catalog.price(instance, region).known:
        notes.append(f"{name}: price unknown")
    return Availability(name, True, None, offered, instance.regions, instance.tensorflow_drives, tuple(notes),
                        region_error(catalog, instance, region))


def gib_text(mib: int) -> str:
    """A catalog GPU memory figure for people: 40960 -> "40GiB", 183359 -> "179.1GiB"."""
    return f"{mib / 1024:g}GiB" if mib % 1024 == 0 else f"{mib / 1024:.1f}GiB"


def gpu_key(model: str) -> str:
    """A GPU model as a key to compare by: "a100", "A100" and "NVIDIA A100" all name the same card."""
    key = model.strip().lower()
    return key[len("nvidia") :].strip() if key.startswith("nvidia") else key


# ---------------------------------------------------------------------------------------------
# Names


def split_name(name: str) -> tuple[str, str]:
    """Family and size: ml.p4d.24xlarge -> (p4d, 24xlarge); a name without ml. works the same."""
    parts = name.split(".")
    if parts and parts[0] == "ml":
        parts = parts[1:]
    family = parts[0] if parts else ""
    size = ".".join(parts[1:])
    return family, size


def _nearest(names: Iterable[str], query: str, n: int) -> list[str]:
    q = query.strip().lower()
    if not q or n <= 0:
        return []
    if not q.startswith("ml."):
        q = "ml." + q  # users often write the EC2 name; SageMaker wants the ml. prefix
    q_family, q_size = split_name(q)

    scored: list[tuple[float, str]] = []
    for name in names:
        family, size = split_name(name)
        if family == q_family:
            family_score = 1.0
        elif family.startswith(q_family) or q_family.startswith(family):
            # "p4" is short for p4d/p4de; the shorter the gap, the likelier the intent.
            family_score = 0.9 - 0.1 * abs(len(family) - len(q_family))
        else:
            family_score = difflib.SequenceMatcher(None, q_family, family).ratio() * 0.8
        # A wrong size usually means another family's same size was meant, so an exact size counts
        # well above a near one.
        if size == q_size:
            size_score = 1.0
        elif not q_size:
            size_score = 0.5  # only a family was given ("p4d"): every size of it is a fair guess
        else:
            size_score = 0.7 * difflib.SequenceMatcher(None, q_size, size).ratio()
        whole = difflib.SequenceMatcher(None, q, name).ratio()
        score = 1.0 if name == q else 0.4 * whole + 0.35 * family_score + 0.25 * size_score
        if score >= 0.6:
            scored.append((score, name))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [name for _, name in scored[:n]]
