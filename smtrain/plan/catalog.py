"""The GPU instance catalog (smtrain/plan/data/instances.yaml) and the choice of an instance type.

This module is on the start-up path of `validate`, `plan` and `instances`: it must never import
sagemaker, boto3 or tensorflow, and it reads its data file only when asked, once.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from smtrain.plan import gpu_facts
from smtrain.spec.problems import brief
from smtrain.spec.units import format_gb, parse_size

__all__ = [
    "UNKNOWN",
    "Availability",
    "Catalog",
    "CatalogError",
    "InstanceType",
    "Price",
    "RegionPrice",
    "Selection",
    "availability",
    "explicit_instance",
    "gib_text",
    "instance_gpu_summary",
    "region_error",
    "load_catalog",
    "no_match_reason",
    "resolve_instance",
    "select_instance",
    "tensorflow_warning",
]

MIB = 2**20

# Keys a catalog file may hold at its top level and in each instance entry. Anything else is
# refused, so that a typo ("gpu_mem") cannot silently drop a figure.
_TOP_KEYS = {"source", "date", "region", "currency", "spot_discount_estimate", "instances", "excluded",
             "regions_source", "regions_scope"}
_REQUIRED_FIELDS = ("gpu", "gpus", "gpu_memory_mib", "vcpus", "memory", "efa", "price")
_OPTIONAL_FIELDS = ("price_note", "region_prices", "regions", "note")
# A figure no source gives is written `unknown` (with a `note` saying why) rather than guessed. These
# fields may be unknown; the GPU model, count and memory never are (EC2 and the SDK list every one).
UNKNOWN = "unknown"
_MAY_BE_UNKNOWN = ("vcpus", "memory", "price")
_OLD_GPU_MEMORY = "gpu_memory"  # the maker's figure ("40GB"), before gpu_memory_mib; still read
_PRICES_META_KEYS = {"source", "date", "region"}
# Bounds past any real figure, which keep the cost maths (price x hours x nodes, in floats) finite: the
# dearest SageMaker training instance costs about 100 USD an hour, the largest GPU has under 300 GB.
MAX_PRICE = 10_000.0  # USD per hour
MAX_COUNT = 2**24  # GPUs, vCPUs or MiB of one GPU's memory (16 TiB)
_MAX_DIGITS = 4300  # Python's int-to-str limit (sys.get_int_max_str_digits): a longer number is no figure
_REGION_RE = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]+")  # us-east-1, us-gov-west-1; fullmatch, never a final "\n"


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


class CatalogError(ValueError):
    """A catalog that cannot be read, or a request it cannot meet. The message is for the user."""


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
        want = _gpu_key(gpu) if gpu else None
        allowed_set = set(allowed) if allowed is not None else None
        return [
            i
            for i in self.instances
            if (want is None or _gpu_key(i.gpu) == want)
            and i.gpus >= min_gpus
            and (min_gpu_memory is None or i.meets_gpu_memory(min_gpu_memory))
            and (allowed_set is None or i.name in allowed_set)
            and i.offered_in(region) is not False
        ]


@dataclass(frozen=True)
class Selection:
    instance: InstanceType
    reason: str  # one sentence: why this type
    candidates: tuple[InstanceType, ...]  # every type that met the needs, in preference order


# ---------------------------------------------------------------------------------------------
# Selection


def _preference(i: InstanceType, per_hour: float | None = None) -> tuple[float, int, int, str]:
    # Cheapest first; an unknown price last. At equal price: fewer GPUs (the request is met with less
    # left idle), then more memory per GPU (more headroom for the same money), then the name, so the
    # order never depends on the file's order.
    price = i.price_per_hour if per_hour is None else per_hour
    return (math.inf if price is None else price, i.gpus, -i.gpu_memory_mib, i.name)


def select_instance(
    catalog: Catalog,
    gpu: str | None,
    gpus_per_node: int,
    min_gpu_memory: int | None,
    allowed: Collection[str] | None = None,
    allowed_reason: str | None = None,
    region: str | None = None,
) -> Selection:
    """The cheapest type with at least `gpus_per_node` GPUs of model `gpu` (any model when None),
    each with at least `min_gpu_memory` bytes, among `allowed` names when given; priced in
    `region` where the catalog knows its prices, else in the catalog's region. Never a type that
    `region` is known not to offer, whose price is unknown, or whose GPU SageMaker's TensorFlow
    images cannot drive (Blackwell)."""
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        raise CatalogError(f"gpus_per_node must be a whole number of at least 1, not {gpus_per_node!r}")
    if min_gpu_memory is not None and min_gpu_memory < 0:
        raise CatalogError("min_gpu_memory cannot be negative")

    pool = catalog.filter(gpu=gpu, min_gpus=gpus_per_node, min_gpu_memory=min_gpu_memory, allowed=allowed)
    left_out = {i.name: why for i in pool if (why := _not_picked(catalog, i, region))}
    matches = sorted(
        (i for i in pool if i.name not in left_out),
        key=lambda i: _preference(i, catalog.price(i, region).per_hour),
    )
    if not matches:
        need = _describe_need(gpu, gpus_per_node, min_gpu_memory)
        if pool:
            raise CatalogError(f"no instance type with {need} can be picked: {_grouped(left_out)}")
        raise CatalogError(
            _no_match_message(catalog, gpu, gpus_per_node, min_gpu_memory, allowed, allowed_reason)
        )

    best = matches[0]
    # Name the model as the catalog spells it ("A100"), whatever case the user wrote.
    need = _describe_need(best.gpu if gpu else None, gpus_per_node, min_gpu_memory)
    within = f" ({allowed_reason})" if allowed_reason else ""
    best_at = _quote(best, catalog.price(best, region))
    if len(matches) == 1:
        reason = f"the only type with {need}{within}: {best_at}"
    else:
        runner_up = matches[1]
        reason = (
            f"cheapest of {len(matches)} types with {need}{within}: {best_at}; "
            f"next: {_quote(runner_up, catalog.price(runner_up, region))}"
        )
    if region is not None and best.offered_in(region) is None:
        reason += f"; whether {region} offers {best.name} for training is unknown"
    if left_out:
        reason += f" (not picked: {_grouped(left_out)})"
    return Selection(instance=best, reason=reason, candidates=tuple(matches))


def _not_picked(catalog: Catalog, i: InstanceType, region: str | None) -> str | None:
    """Why automatic selection must not pick `i`, or None."""
    if i.offered_in(region) is False:
        return f"not offered in {region}"
    if i.tensorflow_drives is False:
        cc = i.compute_capability or (0, 0)
        return "SageMaker's TensorFlow images cannot drive " + ("Blackwell GPUs" if cc >= (10, 0) else "its GPU")
    if not catalog.price(i, region).known:
        return "price unknown"
    return None


def _grouped(reasons: Mapping[str, str]) -> str:
    # "not offered in eu-west-1: ml.a, ml.b; price unknown: ml.c", in the order reasons first appear.
    by_reason: dict[str, list[str]] = {}
    for name, why in reasons.items():
        by_reason.setdefault(why, []).append(name)
    return "; ".join(f"{why}: {', '.join(names)}" for why, names in by_reason.items())


def no_match_reason(catalog: Catalog, gpu: str | None, gpus: int, min_gpu_memory: int | None) -> str:
    """Why no entry has `gpus` GPUs of model `gpu` with `min_gpu_memory` bytes each, naming the
    nearest values the catalog has (its GPU models, the most GPUs, the most memory)."""
    return _no_match_message(catalog, gpu, gpus, min_gpu_memory, None, None)


def _quote(i: InstanceType, price: Price) -> str:
    # An estimated price must not read as a fact, wherever it is quoted.
    if price.per_hour is None:
        return f"{i.name} (price unknown)"
    return f"{i.name} at {_money(price.per_hour)}/h" + (" (estimate)" if price.is_estimate else "")


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
    raise CatalogError(f"unknown instance type {name.strip()!r} (not in the GPU catalog){hint}")


def explicit_instance(catalog: Catalog, name: str, region: str | None) -> tuple[InstanceType, str]:
    """The type a spec names and the plan's reason for it; CatalogError when the catalog lacks it or
    `region` is known not to offer it for training."""
    instance = resolve_instance(catalog, name)
    error = region_error(catalog, instance, region)
    if error:
        raise CatalogError(error)
    reason = "as the spec asks"
    if region is not None and instance.offered_in(region) is None:
        reason += f"; whether {region} offers it for training is unknown"
    return instance, reason


def instance_gpu_summary(instance: InstanceType, mixed_precision: str | None) -> dict[str, Any]:
    """The plan's JSON keys on the type's GPU: compute capability, whether SageMaker's TensorFlow images
    drive it, and what the bundled entrypoint's `mixed_precision` setting becomes on it (None: an own script)."""
    cc = instance.compute_capability
    return {"compute_capability": None if cc is None else f"{cc[0]}.{cc[1]}",
            "tensorflow": instance.tensorflow_drives,
            "mixed_precision": None if mixed_precision is None else gpu_facts.mixed_precision(mixed_precision, instance.gpu)}


def tensorflow_warning(instance: InstanceType, image_uri: str | None) -> str | None:
    """The plan's warning for a type whose GPU SageMaker's TensorFlow images cannot drive (Blackwell)."""
    note = instance.tensorflow_note
    if note is None:
        return None
    if image_uri:
        return f"{instance.name}: {note}; your tensorflow.image_uri must carry a TensorFlow built for it"
    return (f"{instance.name}: {note}; the job is likely to fail at its first GPU operation: choose a type "
            "whose GPU they drive (H200, H100, A100, L40S, ...)")


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


def _describe_need(gpu: str | None, gpus: int, min_gpu_memory: int | None) -> str:
    model = f"{gpu} " if gpu else ""
    text = f">= {gpus} {model}GPU{'s' if gpus != 1 else ''}"
    if min_gpu_memory:
        text += f" with >= {_format_request(min_gpu_memory)} each"
    return text


def _format_request(num_bytes: int) -> str:
    # In the unit the user most likely wrote: 40GiB stays 40GiB instead of 42.9497GB.
    if num_bytes % 2**30 == 0:
        return f"{num_bytes // 2**30}GiB"
    return format_gb(num_bytes)


def gib_text(mib: int) -> str:
    """A catalog GPU memory figure for people: 40960 -> "40GiB", 183359 -> "179.1GiB"."""
    return f"{mib / 1024:g}GiB" if mib % 1024 == 0 else f"{mib / 1024:.1f}GiB"


def _no_match_message(
    catalog: Catalog,
    gpu: str | None,
    gpus: int,
    min_gpu_memory: int | None,
    allowed: Collection[str] | None,
    allowed_reason: str | None,
) -> str:
    # Narrow the pool one need at a time, so the message names the first need nothing meets
    # and what comes closest to it.
    within = f" ({allowed_reason})" if allowed_reason else ""
    pool = list(catalog.instances)
    if allowed is not None:
        allowed_set = set(allowed)
        pool = [i for i in pool if i.name in allowed_set]
        if not pool:
            listed = ", ".join(sorted(allowed_set)) or "none"
            return f"none of the allowed instance types is in the catalog{within}: {listed}"
    scope = " of the allowed types" if allowed is not None else ""

    if gpu:
        with_model = [i for i in pool if _gpu_key(i.gpu) == _gpu_key(gpu)]
        if not with_model:
            models = ", ".join(dict.fromkeys(i.gpu for i in pool))
            return f"no instance{scope} has {gpu} GPUs{within}; GPU models available: {models}"
        pool = with_model
        gpu = with_model[0].gpu

    model = f"{gpu} " if gpu else ""
    most = max(i.gpus for i in pool)
    if most < gpus:
        holders = _cheapest_names(i for i in pool if i.gpus == most)
        return f"no instance{scope} has {gpus} {model}GPUs{within}; the most is {most} ({holders})"

    pool = [i for i in pool if i.gpus >= gpus]
    if min_gpu_memory is None:  # unreachable while filter() and this function agree
        return f"no instance{scope} has {_describe_need(gpu, gpus, None)}{within}"
    best_memory = max(i.gpu_memory_mib for i in pool)
    holders = _cheapest_names(i for i in pool if i.gpu_memory_mib == best_memory)
    return (
        f"no instance{scope} with >= {gpus} {model}GPU{'s' if gpus != 1 else ''} has "
        f">= {_format_request(min_gpu_memory)} per GPU{within}; the most is {gib_text(best_memory)} ({holders})"
    )


def _cheapest_names(instances: Iterable[InstanceType], limit: int = 3) -> str:
    ordered = sorted(instances, key=_preference)
    names = [i.name for i in ordered[:limit]]
    more = len(ordered) - limit
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _gpu_key(model: str) -> str:
    # "a100", "A100" and "NVIDIA A100" all name the same card.
    key = model.strip().lower()
    return key[len("nvidia") :].strip() if key.startswith("nvidia") else key


def _money(usd: float) -> str:
    return f"${usd:,.2f}"


# ---------------------------------------------------------------------------------------------
# Names


def _split_name(name: str) -> tuple[str, str]:
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
    q_family, q_size = _split_name(q)

    scored: list[tuple[float, str]] = []
    for name in names:
        family, size = _split_name(name)
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


# ---------------------------------------------------------------------------------------------
# Loading


_BUNDLED = Path(__file__).parent / "data" / "instances.yaml"


def _bundled_text() -> str:
    # A plain path beside this module: smtrain installs as files (see package-data in
    # pyproject.toml), and importlib.resources would add its own import time for nothing.
    return _BUNDLED.read_text(encoding="utf-8")


def load_catalog(catalog_path: Path | None = None, prices_path: Path | None = None) -> Catalog:
    """The bundled catalog, with a user's catalog file merged over it by name and a prices file
    overriding prices. Raises CatalogError naming the file and entry for anything unusable."""
    base = _bundled_catalog()
    if catalog_path is None and prices_path is None:
        return base
    catalog = base
    if catalog_path is not None:
        catalog = _merge_catalog_file(catalog, Path(catalog_path))
    if prices_path is not None:
        catalog = _apply_prices_file(catalog, Path(prices_path))
    return catalog


@functools.lru_cache(maxsize=1)
def _bundled_catalog() -> Catalog:
    # Parsed once per process: the CLI may ask several times, the file never changes under it.
    label = "smtrain/plan/data/instances.yaml"
    data = _parse_yaml(_bundled_text(), label)
    return _catalog_from_data(data, label, base=None)


def _merge_catalog_file(base: Catalog, path: Path) -> Catalog:
    label = str(path)
    data = _parse_yaml(_read(path), label)
    return _catalog_from_data(data, label, base=base)


def _catalog_from_data(data: Any, label: str, base: Catalog | None) -> Catalog:
    if not isinstance(data, dict):
        raise CatalogError(f"{label}: expected a mapping with 'instances', 'source' and 'date' at the top")
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise CatalogError(
            f"{label}: unknown top-level key {unknown[0]!r}; allowed: {', '.join(sorted(_TOP_KEYS))}"
        )

    currency = data.get("currency")
    if currency is not None and str(currency).strip().upper() != "USD":
        # Every amount smtrain prints is in dollars; a file in another currency would mislead.
        raise CatalogError(f"{label}: prices must be in USD, not {currency!r}")

    entries = data.get("instances", {} if base is not None else None)
    if entries is None:
        raise CatalogError(f"{label}: missing 'instances'")
    if not isinstance(entries, dict):
        raise CatalogError(f"{label}: 'instances' must map instance names to their figures")

    region = _region(label, _text(data["region"])) if data.get("region") else "us-east-1"
    if base is not None:
        if data.get("region") and region != base.region:
            # Entries not in the user's file keep the bundled prices, so one region must hold for all.
            raise CatalogError(
                f"{label}: 'region' is {region}, but the bundled prices are for {base.region}: give 'price' "
                f"for {base.region}, and another region's under an entry's region_prices or in a prices "
                f"file with region: {region}"
            )
        region = base.region
    scope = _regions_list(f"{label}: regions_scope", data["regions_scope"]) if data.get("regions_scope") else None
    read = [_parse_entry(label, name, entry, region, scope) for name, entry in entries.items()]
    parsed = [entry for entry, _ in read]
    notes = (base.notes if base is not None else ()) + _old_field_note(label, [c for _, c in read if c])

    if base is None:
        for key in ("source", "date", "spot_discount_estimate"):
            if data.get(key) in (None, ""):
                raise CatalogError(f"{label}: missing top-level {key!r}")
        merged = parsed
        source, date = _text(data["source"]), _text(data["date"])
        spot = _spot(label, data["spot_discount_estimate"])
    else:
        # The user's entries replace bundled ones of the same name and add the rest.
        replacing = {i.name: i for i in parsed}
        merged = [replacing.pop(i.name, i) for i in base.instances] + list(replacing.values())
        source = _text(data["source"]) if data.get("source") else _annotate(base.price_source, parsed, label)
        date = _text(data["date"]) if data.get("date") else base.price_date
        spot = (
            _spot(label, data["spot_discount_estimate"])
            if data.get("spot_discount_estimate") is not None
            else base.spot_discount_estimate
        )
    excluded = {**(base.excluded if base is not None else {}), **_excluded(label, data.get("excluded"))}
    names = {i.name for i in merged}
    regions_source = _text(data["regions_source"]) if data.get("regions_source") else None
    if base is not None and base.regions_source:
        regions_source = base.regions_source + (f"; {regions_source} ({Path(label).name})" if regions_source else "")
    return Catalog(
        instances=tuple(merged),
        price_source=source,
        price_date=date,
        spot_discount_estimate=spot,
        region=region,
        notes=notes,
        # A type the user's catalog describes is no longer left out.
        excluded={k: v for k, v in excluded.items() if k not in names},
        regions_source=regions_source,
    )


def _excluded(label: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) and v.strip() for v in value.values()):
        raise CatalogError(f"{label}: 'excluded' must map instance names to the reason each is left out")
    return {str(k).strip(): v.strip() for k, v in value.items()}


def _regions_list(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise CatalogError(f"{where}: give a list of AWS regions, e.g. [us-east-1, us-west-2], or 'unknown'")
    return tuple(sorted({_region(where, str(r).strip()) for r in value}))


def _old_field_note(label: str, conversions: list[str]) -> tuple[str, ...]:
    # Said once per file: the old field still works, and here is exactly what it was read as.
    if not conversions:
        return ()
    n = len(conversions)
    shown = ", ".join(conversions[:3]) + (f" and {n - 3} more" if n > 3 else "")
    return (
        f"{label}: {n} entr{'y uses' if n == 1 else 'ies use'} the old field '{_OLD_GPU_MEMORY}', read as the "
        f"GPU maker's figure, whose GB are GiB: {shown}; write gpu_memory_mib to say it exactly",
    )


def _annotate(source: str, changed: list[InstanceType], label: str) -> str:
    # Without a source of its own, the user's file still has to show up in the provenance.
    if not changed:
        return source
    return f"{source}; {len(changed)} entr{'y' if len(changed) == 1 else 'ies'} from {Path(label).name}"


def _parse_entry(
    label: str, name: Any, entry: Any, region: str, scope: tuple[str, ...] | None = None
) -> tuple[InstanceType, str | None]:
    """The entry, and how its old 'gpu_memory' field was read when it used that field."""
    if not isinstance(name, str) or not name.startswith("ml.") or name.count(".") != 2:
        raise CatalogError(
            f"{label}: instance {name!r}: names take SageMaker's form 'ml.<family>.<size>', e.g. ml.p4d.24xlarge"
        )
    where = f"{label}: instance {name!r}"
    if not isinstance(entry, dict):
        raise CatalogError(f"{where}: expected a mapping of {', '.join(_REQUIRED_FIELDS)}")
    unknown = sorted(set(map(str, entry)) - set(_REQUIRED_FIELDS) - set(_OPTIONAL_FIELDS) - {_OLD_GPU_MEMORY})
    if unknown:
        raise CatalogError(
            f"{where}: unknown field {unknown[0]!r}; fields: {', '.join(_REQUIRED_FIELDS + _OPTIONAL_FIELDS)}"
        )
    given = set(entry) | ({"gpu_memory_mib"} if _OLD_GPU_MEMORY in entry else set())
    missing = [f for f in _REQUIRED_FIELDS if f not in given]
    if missing:
        raise CatalogError(f"{where}: missing field {missing[0]!r}")
    gpu_memory_mib, conversion = _gpu_memory_mib(label, name, entry)

    gpu = entry["gpu"]
    if not isinstance(gpu, str) or not gpu.strip():
        raise CatalogError(f"{where}: 'gpu' must name the GPU model, e.g. A100")
    efa = entry["efa"]
    if not isinstance(efa, bool):
        raise CatalogError(f"{where}: 'efa' must be true or false, not {efa!r}")
    note = entry.get("price_note")
    unknown = [key for key in _MAY_BE_UNKNOWN if _is_unknown(entry[key])]
    facts_note = _text(entry["note"]) if entry.get("note") not in (None, "") else None
    if unknown and facts_note is None:
        raise CatalogError(f"{where}: {', '.join(unknown)} unknown: add a 'note' saying why (no source gives it)")
    regions = entry.get("regions")
    instance = InstanceType(
        name=name,
        family=_split_name(name)[0],
        gpu=gpu.strip(),
        gpus=_count(_at(label, name, entry, "gpus"), "gpus", entry["gpus"]),
        gpu_memory_mib=gpu_memory_mib,
        vcpus=None if "vcpus" in unknown else _count(_at(label, name, entry, "vcpus"), "vcpus", entry["vcpus"]),
        memory=None if "memory" in unknown else _size(_at(label, name, entry, "memory"), "memory", entry["memory"]),
        efa=efa,
        price_per_hour=None if "price" in unknown else _price(_at(label, name, entry, "price"), entry["price"]),
        price_note=_text(note) if note not in (None, "") else None,
        region_prices=_region_prices(where, entry.get("region_prices"), region),
        note=facts_note,
        regions=None if regions is None or _is_unknown(regions) else _regions_list(f"{where}: regions", regions),
        regions_scope=scope,
    )
    return instance, conversion and f"{name}: {conversion}"


def _at(label: str, name: str, mapping: Any, key: str) -> str:
    """Where a figure is, for a message: "file:line: instance 'ml.x.y'" (the line where the file's reader kept it)."""
    line = getattr(mapping, "lines", {}).get(key)
    return f"{label}{f':{line}' if line else ''}: instance {name!r}"


def _is_unknown(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == UNKNOWN


def _gpu_memory_mib(label: str, name: str, entry: dict[str, Any]) -> tuple[int, str | None]:
    if "gpu_memory_mib" in entry and _OLD_GPU_MEMORY in entry:
        raise CatalogError(f"{label}: instance {name!r}: give 'gpu_memory_mib' or the old '{_OLD_GPU_MEMORY}', "
                           "not both")
    if "gpu_memory_mib" in entry:
        where = _at(label, name, entry, "gpu_memory_mib")
        return _count(where, "gpu_memory_mib", entry["gpu_memory_mib"], unit="MiB"), None
    where = _at(label, name, entry, _OLD_GPU_MEMORY)
    value = entry[_OLD_GPU_MEMORY]
    # The old field held the maker's figure ("40GB"). GPU makers' GB are GiB (the "40GB" A100 has
    # 40960 MiB, as the SDK and EC2 list it), so a decimal unit name is read as its binary one.
    binary = re.sub(r"(?i)([kmgt])b$", r"\1iB", value.strip()) if isinstance(value, str) else value
    mib = round(_size(where, _OLD_GPU_MEMORY, binary) / MIB)
    if not 1 <= mib <= MAX_COUNT:
        raise CatalogError(f"{where}: {_OLD_GPU_MEMORY!r} must be from 1MiB to {gib_text(MAX_COUNT)}, not {value!r}")
    return mib, f"{_OLD_GPU_MEMORY}: {value} -> gpu_memory_mib: {mib}"


def _region_prices(where: str, value: Any, own_region: str) -> tuple[RegionPrice, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise CatalogError(f"{where}: region_prices must map regions to USD per hour, e.g. {{eu-west-1: 30.1}}")
    prices = []
    for key, per_hour in value.items():
        region = _region(f"{where}: region_prices", str(key).strip())
        if region == own_region:
            raise CatalogError(
                f"{where}: region_prices: {region} is the catalog's own region: its price is 'price'"
            )
        line = getattr(value, "lines", {}).get(key)
        at = where.replace(": instance", f":{line}: instance", 1) if line else where
        prices.append(RegionPrice(region, _price(f"{at} in {region}", per_hour)))
    return tuple(sorted(prices, key=lambda p: p.region))


def _apply_prices_file(base: Catalog, path: Path) -> Catalog:
    label = str(path)
    file_name = Path(label).name
    text = _read(path)
    data = _parse_json(text, label) if path.suffix.lower() == ".json" else _parse_yaml(text, label)
    if not isinstance(data, dict):
        raise CatalogError(f"{label}: expected a mapping of instance name to USD per hour")
    region = _region(label, _text(data["region"])) if data.get("region") else base.region

    prices: dict[str, float] = {}
    for key, value in data.items():
        name = str(key).strip()
        if name in _PRICES_META_KEYS:
            continue
        if base.get(name) is None:
            near = base.nearest(name)
            hint = f"; nearest: {', '.join(near)}" if near else ""
            raise CatalogError(f"{label}: unknown instance type {name!r}{hint}")
        line = getattr(data, "lines", {}).get(key) or _json_line(text, key)
        prices[name] = _price(f"{label}{f':{line}' if line else ''}: instance {name!r}", value)

    plural = "s" if len(prices) != 1 else ""
    if region != base.region:
        # Another region's prices sit beside the catalog's own, whose source and date stay.
        instances = tuple(
            _add_region_price(i, RegionPrice(region, prices[i.name], f"from {file_name}")) if i.name in prices else i
            for i in base.instances
        )
        cited = ", ".join(_text(data[k]) for k in ("source", "date") if data.get(k))
        source = f"{base.price_source}; {len(prices)} {region} price{plural} from {file_name}"
        return replace(base, instances=instances, price_source=source + (f" ({cited})" if cited else ""))

    instances = tuple(
        _replace_price(i, prices[i.name], file_name) if i.name in prices else i for i in base.instances
    )
    if data.get("source"):
        source = _text(data["source"])
    elif prices:
        source = f"{base.price_source}; {len(prices)} price{plural} from {file_name}"
    else:
        source = base.price_source
    date = _text(data["date"]) if data.get("date") else base.price_date
    return replace(base, instances=instances, price_source=source, price_date=date)


def _replace_price(i: InstanceType, price: float, file_name: str) -> InstanceType:
    # The bundled note described the bundled price; the new one comes from the user's file.
    return replace(i, price_per_hour=price, price_note=f"from {file_name}")


def _add_region_price(i: InstanceType, price: RegionPrice) -> InstanceType:
    kept = [p for p in i.region_prices if p.region != price.region]
    return replace(i, region_prices=tuple(sorted([*kept, price], key=lambda p: p.region)))


# --- small validators -------------------------------------------------------------------------


def _count(where: str, key: str, value: Any, unit: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        what = f"a whole number of {unit}" if unit else "a whole number"
        raise CatalogError(f"{where}: {key!r} must be {what} from 1 to {MAX_COUNT}, not {brief(value)}")
    return value


def _region(where: str, value: str) -> str:
    if not _REGION_RE.fullmatch(value):
        raise CatalogError(f"{where}: {value!r} is not an AWS region name, e.g. eu-west-1")
    return value


def _size(where: str, key: str, value: Any) -> int:
    # A bare number would be read as bytes, so "gpu_memory: 80" would describe an 80-byte GPU;
    # demand the unit instead of guessing one.
    if not isinstance(value, str) or not value.strip().upper().endswith("B"):
        raise CatalogError(f"{where}: {key!r} needs a unit, e.g. 80GB or 1152GiB, not {value!r}")
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise CatalogError(f"{where}: {key!r}: {exc}") from None
    if size <= 0:
        raise CatalogError(f"{where}: {key!r} must be more than zero")
    return size


def _price(where: str, value: Any) -> float:
    # A float's infinity and NaN, and whole numbers past a float (10^400), are no price: refused here, before
    # any sum or sort meets them.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (math.inf, -math.inf):
        raise CatalogError(f"{where}: price must be a number of USD per hour, not {brief(value)}")
    if value < 0:
        raise CatalogError(f"{where}: price cannot be negative ({brief(value)})")
    if value > MAX_PRICE:
        raise CatalogError(f"{where}: price {brief(value)} USD per hour is past any instance's (at most "
                           f"{MAX_PRICE:,.0f}); give USD per hour of one instance")
    return float(value)


def _spot(label: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise CatalogError(
            f"{label}: 'spot_discount_estimate' must be a fraction from 0 up to (not including) 1, not {value!r}"
        )
    return float(value)


def _text(value: Any) -> str:
    # YAML reads an unquoted 2026-01-31 as a date; the catalog keeps dates as text.
    return value.isoformat() if hasattr(value, "isoformat") else str(value).strip()


# --- files ------------------------------------------------------------------------------------


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CatalogError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CatalogError(f"{path}: is a directory, not a catalog file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read: {exc}") from None


def _parse_json(text: str, label: str) -> Any:
    try:
        return json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{label}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    except _TooLong as exc:
        index = text.find(exc.text)
        where = f"{label}:{text.count(chr(10), 0, index) + 1}" if index >= 0 else label
        raise CatalogError(f"{where}: {exc}") from None


def _json_int(text: str) -> int:
    # json reads whole numbers with int(), which refuses more than 4300 digits with a ValueError of its own.
    if len(text.lstrip("-")) > _MAX_DIGITS:
        raise _TooLong(text)
    return int(text)


def _json_line(text: str, key: str) -> int | None:
    """The line of `key` in a JSON prices file (json keeps no positions): where "key": first stands."""
    found = re.search(re.escape(json.dumps(key)) + r"\s*:", text)
    return text.count("\n", 0, found.start()) + 1 if found else None


def _parse_yaml(text: str, label: str) -> Any:
    import yaml  # imported on first load only: `smtrain --help` need not pay for it

    try:
        return yaml.load(text, Loader=_unique_key_loader(yaml))  # a SafeLoader subclass
    except _DuplicateKey as exc:
        raise CatalogError(f"{label}:{exc.line}: {exc.key!r} appears twice") from None
    except _TooLong as exc:
        raise CatalogError(f"{label}:{exc.line}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{label}:{mark.line + 1}:{mark.column + 1}" if mark is not None else label
        problem = getattr(exc, "problem", None) or str(exc)
        raise CatalogError(f"{where}: not valid YAML ({problem})") from None


class _TooLong(Exception):
    """A number of more digits than Python reads (and than any catalog figure has)."""

    def __init__(self, text: str, line: int | None = None) -> None:
        super().__init__(f"a number of {len(text.lstrip('+-'))} digits ({brief(text, 30)}) is no price or "
                         "count: give the figure itself")
        self.text = text
        self.line = line


class _Lines(dict):  # type: ignore[type-arg]
    """A mapping read from YAML, with the line of each key's value (for messages): lines[key]."""

    lines: dict[Any, int]


class _DuplicateKey(Exception):
    def __init__(self, key: object, line: int) -> None:
        super().__init__(key, line)
        self.key = key
        self.line = line


@functools.lru_cache(maxsize=1)
def _unique_key_loader(yaml: Any) -> type:
    # PyYAML keeps the last of two equal keys without a word; in a catalog that hides a
    # duplicated entry, so refuse it. The C loader is much faster on the bundled file.
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class UniqueKeyLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, Mapping | list):
                    continue
                if key in seen:
                    raise _DuplicateKey(key, key_node.start_mark.line + 1)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_map(self, node: Any) -> Iterator[dict[Any, Any]]:
            data = _Lines()
            yield data
            data.update(self.construct_mapping(node))
            data.lines = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node)
                if isinstance(key, str | int):
                    data.lines[key] = value_node.start_mark.line + 1

        def construct_yaml_int(self, node: Any) -> int:
            try:
                return int(super().construct_yaml_int(node))
            except ValueError:  # more than 4300 digits: int() refuses them
                raise _TooLong(node.value, node.start_mark.line + 1) from None

    UniqueKeyLoader.add_constructor("tag:yaml.org,2002:map", UniqueKeyLoader.construct_yaml_map)
    UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", UniqueKeyLoader.construct_yaml_int)
    return UniqueKeyLoader
