"""The GPU instance catalog (smtrain/plan/data/instances.yaml) and the choice of an instance type.

This module is on the start-up path of `validate`, `plan` and `instances`: it must never import
sagemaker, boto3 or tensorflow, and it reads its data file only when asked, once.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from smtrain.spec.units import format_gb, parse_size

__all__ = [
    "Catalog",
    "CatalogError",
    "InstanceType",
    "Selection",
    "load_catalog",
    "resolve_instance",
    "select_instance",
]

# Keys a catalog file may hold at its top level and in each instance entry. Anything else is
# refused, so that a typo ("gpu_mem") cannot silently drop a figure.
_TOP_KEYS = {"source", "date", "region", "currency", "spot_discount_estimate", "instances"}
_REQUIRED_FIELDS = ("gpu", "gpus", "gpu_memory", "vcpus", "memory", "efa", "price")
_OPTIONAL_FIELDS = ("price_note",)
_PRICES_META_KEYS = {"source", "date"}


@dataclass(frozen=True)
class InstanceType:
    name: str  # "ml.p4d.24xlarge"
    family: str  # "p4d"
    gpu: str  # "A100"
    gpus: int
    gpu_memory: int  # bytes per GPU, from the vendor's GB figure (10^9)
    vcpus: int
    memory: int  # bytes of host memory
    efa: bool
    price_per_hour: float  # USD on-demand
    price_note: str | None = None  # why this price is weaker than the catalog's source, if it is

    @property
    def total_gpu_memory(self) -> int:
        return self.gpus * self.gpu_memory


class CatalogError(ValueError):
    """A catalog that cannot be read, or a request it cannot meet. The message is for the user."""


@dataclass(frozen=True)
class Catalog:
    instances: tuple[InstanceType, ...]
    price_source: str
    price_date: str
    spot_discount_estimate: float
    region: str = "us-east-1"
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

    def spot_price(self, instance: InstanceType) -> float:
        """A rough managed-spot hourly price: on-demand less the catalog's discount estimate."""
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
    ) -> list[InstanceType]:
        """Entries with this GPU model (any case), at least `min_gpus` GPUs and at least
        `min_gpu_memory` bytes per GPU, limited to `allowed` names when given; catalog order."""
        want = _gpu_key(gpu) if gpu else None
        allowed_set = set(allowed) if allowed is not None else None
        return [
            i
            for i in self.instances
            if (want is None or _gpu_key(i.gpu) == want)
            and i.gpus >= min_gpus
            and (min_gpu_memory is None or i.gpu_memory >= min_gpu_memory)
            and (allowed_set is None or i.name in allowed_set)
        ]


@dataclass(frozen=True)
class Selection:
    instance: InstanceType
    reason: str  # one sentence: why this type
    candidates: tuple[InstanceType, ...]  # every type that met the needs, in preference order


# ---------------------------------------------------------------------------------------------
# Selection


def _preference(i: InstanceType) -> tuple[float, int, int, str]:
    # Cheapest first. At equal price: fewer GPUs (the request is met with less left idle), then
    # more memory per GPU (more headroom for the same money), then the name, so the order never
    # depends on the file's order.
    return (i.price_per_hour, i.gpus, -i.gpu_memory, i.name)


def select_instance(
    catalog: Catalog,
    gpu: str | None,
    gpus_per_node: int,
    min_gpu_memory: int | None,
    allowed: Collection[str] | None = None,
    allowed_reason: str | None = None,
) -> Selection:
    """The cheapest type with at least `gpus_per_node` GPUs of model `gpu` (any model when None),
    each with at least `min_gpu_memory` bytes, among `allowed` names when given."""
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        raise CatalogError(f"gpus_per_node must be a whole number of at least 1, not {gpus_per_node!r}")
    if min_gpu_memory is not None and min_gpu_memory < 0:
        raise CatalogError("min_gpu_memory cannot be negative")

    matches = sorted(
        catalog.filter(gpu=gpu, min_gpus=gpus_per_node, min_gpu_memory=min_gpu_memory, allowed=allowed),
        key=_preference,
    )
    if not matches:
        raise CatalogError(
            _no_match_message(catalog, gpu, gpus_per_node, min_gpu_memory, allowed, allowed_reason)
        )

    best = matches[0]
    # Name the model as the catalog spells it ("A100"), whatever case the user wrote.
    need = _describe_need(best.gpu if gpu else None, gpus_per_node, min_gpu_memory)
    within = f" ({allowed_reason})" if allowed_reason else ""
    if len(matches) == 1:
        reason = f"the only type with {need}{within}: {best.name} at {_money(best.price_per_hour)}/h"
    else:
        runner_up = matches[1]
        reason = (
            f"cheapest of {len(matches)} types with {need}{within}: {best.name} at "
            f"{_money(best.price_per_hour)}/h; next: {runner_up.name} at {_money(runner_up.price_per_hour)}/h"
        )
    return Selection(instance=best, reason=reason, candidates=tuple(matches))


def resolve_instance(catalog: Catalog, name: str) -> InstanceType:
    """The catalog entry for an instance type the user named, or a CatalogError with suggestions."""
    found = catalog.get(name)
    if found is not None:
        return found
    suggestions = catalog.nearest(name)
    hint = (
        f"; nearest: {', '.join(suggestions)}" if suggestions else "; `smtrain instances` lists the catalog"
    )
    raise CatalogError(f"unknown instance type {name.strip()!r} (not in the GPU catalog){hint}")


def _describe_need(gpu: str | None, gpus: int, min_gpu_memory: int | None) -> str:
    model = f"{gpu} " if gpu else ""
    text = f">= {gpus} {model}GPU{'s' if gpus != 1 else ''}"
    if min_gpu_memory:
        text += f" with >= {format_gb(min_gpu_memory)} each"
    return text


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
    best_memory = max(i.gpu_memory for i in pool)
    holders = _cheapest_names(i for i in pool if i.gpu_memory == best_memory)
    return (
        f"no instance{scope} with >= {gpus} {model}GPU{'s' if gpus != 1 else ''} has "
        f">= {format_gb(min_gpu_memory)} per GPU{within}; the most is {format_gb(best_memory)} ({holders})"
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

    parsed = [_parse_entry(label, name, entry) for name, entry in entries.items()]

    if base is None:
        for key in ("source", "date", "spot_discount_estimate"):
            if data.get(key) in (None, ""):
                raise CatalogError(f"{label}: missing top-level {key!r}")
        merged = parsed
        source, date = _text(data["source"]), _text(data["date"])
        spot = _spot(label, data["spot_discount_estimate"])
        region = _text(data.get("region") or "us-east-1")
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
        region = _text(data["region"]) if data.get("region") else base.region
    return Catalog(
        instances=tuple(merged),
        price_source=source,
        price_date=date,
        spot_discount_estimate=spot,
        region=region,
    )


def _annotate(source: str, changed: list[InstanceType], label: str) -> str:
    # Without a source of its own, the user's file still has to show up in the provenance.
    if not changed:
        return source
    return f"{source}; {len(changed)} entr{'y' if len(changed) == 1 else 'ies'} from {Path(label).name}"


def _parse_entry(label: str, name: Any, entry: Any) -> InstanceType:
    if not isinstance(name, str) or not name.startswith("ml.") or name.count(".") != 2:
        raise CatalogError(
            f"{label}: instance {name!r}: names take SageMaker's form 'ml.<family>.<size>', e.g. ml.p4d.24xlarge"
        )
    where = f"{label}: instance {name!r}"
    if not isinstance(entry, dict):
        raise CatalogError(f"{where}: expected a mapping of {', '.join(_REQUIRED_FIELDS)}")
    unknown = sorted(set(map(str, entry)) - set(_REQUIRED_FIELDS) - set(_OPTIONAL_FIELDS))
    if unknown:
        raise CatalogError(
            f"{where}: unknown field {unknown[0]!r}; fields: {', '.join(_REQUIRED_FIELDS + _OPTIONAL_FIELDS)}"
        )
    missing = [f for f in _REQUIRED_FIELDS if f not in entry]
    if missing:
        raise CatalogError(f"{where}: missing field {missing[0]!r}")

    gpu = entry["gpu"]
    if not isinstance(gpu, str) or not gpu.strip():
        raise CatalogError(f"{where}: 'gpu' must name the GPU model, e.g. A100")
    efa = entry["efa"]
    if not isinstance(efa, bool):
        raise CatalogError(f"{where}: 'efa' must be true or false, not {efa!r}")
    note = entry.get("price_note")
    return InstanceType(
        name=name,
        family=_split_name(name)[0],
        gpu=gpu.strip(),
        gpus=_count(where, "gpus", entry["gpus"]),
        gpu_memory=_size(where, "gpu_memory", entry["gpu_memory"]),
        vcpus=_count(where, "vcpus", entry["vcpus"]),
        memory=_size(where, "memory", entry["memory"]),
        efa=efa,
        price_per_hour=_price(where, entry["price"]),
        price_note=_text(note) if note not in (None, "") else None,
    )


def _apply_prices_file(base: Catalog, path: Path) -> Catalog:
    label = str(path)
    text = _read(path)
    data = _parse_json(text, label) if path.suffix.lower() == ".json" else _parse_yaml(text, label)
    if not isinstance(data, dict):
        raise CatalogError(f"{label}: expected a mapping of instance name to USD per hour")

    prices: dict[str, float] = {}
    for key, value in data.items():
        name = str(key).strip()
        if name in _PRICES_META_KEYS:
            continue
        if base.get(name) is None:
            near = base.nearest(name)
            hint = f"; nearest: {', '.join(near)}" if near else ""
            raise CatalogError(f"{label}: unknown instance type {name!r}{hint}")
        prices[name] = _price(f"{label}: instance {name!r}", value)

    instances = tuple(
        _replace_price(i, prices[i.name], Path(label).name) if i.name in prices else i for i in base.instances
    )
    if data.get("source"):
        source = _text(data["source"])
    elif prices:
        source = f"{base.price_source}; {len(prices)} price{'s' if len(prices) != 1 else ''} from {Path(label).name}"
    else:
        source = base.price_source
    date = _text(data["date"]) if data.get("date") else base.price_date
    return Catalog(
        instances=instances,
        price_source=source,
        price_date=date,
        spot_discount_estimate=base.spot_discount_estimate,
        region=base.region,
    )


def _replace_price(i: InstanceType, price: float, file_name: str) -> InstanceType:
    # The bundled note described the bundled price; the new one comes from the user's file.
    return replace(i, price_per_hour=price, price_note=f"from {file_name}")


# --- small validators -------------------------------------------------------------------------


def _count(where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CatalogError(f"{where}: {key!r} must be a whole number of at least 1, not {value!r}")
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
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CatalogError(f"{where}: price must be a number of USD per hour, not {value!r}")
    if value < 0:
        raise CatalogError(f"{where}: price cannot be negative ({value})")
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
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{label}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None


def _parse_yaml(text: str, label: str) -> Any:
    import yaml  # imported on first load only: `smtrain --help` need not pay for it

    try:
        return yaml.load(text, Loader=_unique_key_loader(yaml))  # a SafeLoader subclass
    except _DuplicateKey as exc:
        raise CatalogError(f"{label}:{exc.line}: {exc.key!r} appears twice") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{label}:{mark.line + 1}:{mark.column + 1}" if mark is not None else label
        problem = getattr(exc, "problem", None) or str(exc)
        raise CatalogError(f"{where}: not valid YAML ({problem})") from None


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

    return UniqueKeyLoader
