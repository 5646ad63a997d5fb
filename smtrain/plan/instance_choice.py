"""The choice of an instance type from the catalog: the cheapest that meets a spec's needs (select_instance),
the one a spec names (explicit_instance), why nothing matches, and the plan's lines on the type's GPU.

Reads a Catalog (catalog.py), never a file. On the start-up path of `validate` and `plan`: it must never
import sagemaker, boto3 or tensorflow.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from smtrain.plan import gpu_facts
from smtrain.plan.catalog import (
    Catalog,
    CatalogError,
    InstanceType,
    Price,
    gib_text,
    gpu_key,
    region_error,
    resolve_instance,
)
from smtrain.spec.units import format_gb

__all__ = [
    "Selection",
    "explicit_instance",
    "instance_gpu_summary",
    "no_match_reason",
    "select_instance",
    "tensorflow_warning",
]


@dataclass(frozen=True)
class Selection:
    instance: InstanceType
    reason: str  # one sentence: why this type
    candidates: tuple[InstanceType, ...]  # every type that met the needs, in preference order


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
        with_model = [i for i in pool if gpu_key(i.gpu) == gpu_key(gpu)]
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



def _money(usd: float) -> str:
    return f"${usd:,.2f}"
