"""Reading the catalog's data files: the bundled data/instances.yaml (once per process), a user's catalog
file merged over it by name, and a prices file (YAML or JSON) overriding prices or adding another
region's. Every figure is checked against bounds past any real one, and a bad one is refused naming the
file, line and entry.

Builds the Catalog of catalog.py. On the start-up path of `validate`, `plan` and `instances`: it must never
import sagemaker, boto3 or tensorflow, and it reads the bundled file only when asked, once.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from smtrain.plan.catalog import MIB, Catalog, CatalogError, InstanceType, RegionPrice, gib_text, split_name
from smtrain.spec.problems import brief
from smtrain.spec.units import parse_size

__all__ = ["MAX_COUNT", "MAX_PRICE", "UNKNOWN", "load_catalog"]

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
        family=split_name(name)[0],
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
