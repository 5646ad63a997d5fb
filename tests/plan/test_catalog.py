"""Tests for the GPU instance catalog (smtrain/plan/catalog.py), its data files (catalog_files.py) and
instance selection (instance_choice.py)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smtrain.plan.catalog import Catalog, CatalogError, InstanceType, RegionPrice, resolve_instance
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.instance_choice import Selection, no_match_reason, select_instance
from smtrain.spec.units import parse_size
from tests.support import ROOT

REPO = ROOT
GB = 10**9
GIB = 2**30
MIB = 2**20

REQUIRED = {
    "p3": {"ml.p3.2xlarge", "ml.p3.8xlarge", "ml.p3.16xlarge"},
    "p3dn": {"ml.p3dn.24xlarge"},
    "p4d": {"ml.p4d.24xlarge"},
    "p4de": {"ml.p4de.24xlarge"},
    "p5": {"ml.p5.48xlarge"},
    "p5e": {"ml.p5e.48xlarge"},
    "p5en": {"ml.p5en.48xlarge"},
    "g4dn": {f"ml.g4dn.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")},
    "g5": {
        f"ml.g5.{s}"
        for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")
    },
    "g6": {
        f"ml.g6.{s}"
        for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")
    },
    "g6e": {
        f"ml.g6e.{s}"
        for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")
    },
    "p6-b200": {"ml.p6-b200.48xlarge"},
    "p6-b300": {"ml.p6-b300.48xlarge"},
    "g7": {f"ml.g7.{s}" for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")},
    "g7e": {f"ml.g7e.{s}" for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")},
}

# Per-GPU memory each model ships with, in the maker's "GB" (which are GiB: A100 40GB = 40960 MiB).
GPU_MEMORY_GB = {
    "V100": {16, 32},
    "A100": {40, 80},
    "H100": {80},
    "H200": {141},
    "T4": {16},
    "A10G": {24},
    "L4": {24},
    "L40S": {48},
    "RTX PRO 4500": {32},
    "RTX PRO Server 6000": {96},
}
# EC2's figure, kept as EC2 gives it where the SDK lacks the type: not a whole number of the maker's GB.
EC2_GPU_MIB = {"B200": 183359, "B300": 275040}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def make(
    name: str, gpu: str = "A100", gpus: int = 8, gpu_gb: int = 40, price: float = 10.0, mib: int | None = None
) -> InstanceType:
    """An entry whose GPUs hold the maker's `gpu_gb` "GB" (GiB), or exactly `mib` MiB when given."""
    return InstanceType(
        name=name,
        family=name.split(".")[1],
        gpu=gpu,
        gpus=gpus,
        gpu_memory_mib=mib if mib is not None else gpu_gb * 1024,
        vcpus=8 * gpus,
        memory=64 * gpus * GIB,
        efa=False,
        price_per_hour=price,
    )


def small(*instances: InstanceType) -> Catalog:
    return Catalog(
        instances=instances, price_source="test", price_date="2026-01-01", spot_discount_estimate=0.7
    )


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- (a) the bundled figures against the SageMaker SDK and the service model ------------------


# The SDK's file lists ml.g5.48xlarge at 183104 MiB for 8 A10G (22888 each, which is 24 decimal GB
# rounded down to MiB), while it lists the same A10G at 24576 MiB in every other g5 size. The
# catalog keeps one figure per GPU model; if the SDK changes this entry, look again.
SDK_OUTLIERS = {"ml.g5.48xlarge": 183104}


def _sdk_gpu_info(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, int]]:
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    from sagemaker import instance_types_gpu_info

    return instance_types_gpu_info.retrieve("us-east-1")


def test_gpu_memory_is_the_sagemaker_sdk_figure_in_mib(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    sdk = _sdk_gpu_info(monkeypatch)
    compared = []
    for inst in catalog:
        info = sdk.get(inst.name)
        if info is None:
            continue
        assert info["Count"] == inst.gpus, inst.name
        if inst.name in SDK_OUTLIERS:
            assert info["TotalGpuMemoryInMiB"] == SDK_OUTLIERS[inst.name], inst.name
        else:
            assert info["TotalGpuMemoryInMiB"] == inst.gpus * inst.gpu_memory_mib, inst.name
        compared.append(inst.name)
    assert len(compared) >= 20, f"only {len(compared)} types could be compared: {compared}"
    # The outlier keeps the figure the SDK gives the same GPU in the family's other sizes.
    g5 = {sdk[n]["TotalGpuMemoryInMiB"] // sdk[n]["Count"] for n in sdk if n.startswith("ml.g5.") and n not in SDK_OUTLIERS}
    assert g5 == {catalog.get("ml.g5.48xlarge").gpu_memory_mib}  # type: ignore[union-attr]


def _ec2_instance_types() -> dict[str, Any]:
    # moto ships a snapshot of EC2 DescribeInstanceTypes; read the file without importing moto.
    spec = importlib.util.find_spec("moto")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


def test_gpu_memory_agrees_with_ec2_and_every_type_is_checked(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    ec2 = _ec2_instance_types()
    compared = []
    for inst in catalog:
        info = ec2.get(inst.name.removeprefix("ml."), {}).get("GpuInfo")
        if info is None:
            continue
        (gpu,) = info["Gpus"]
        assert (gpu["Name"], gpu["Count"]) == (inst.gpu, inst.gpus), inst.name
        listed = gpu["MemoryInfo"]["SizeInMiB"]
        if listed != inst.gpu_memory_mib:
            # EC2 lists some cards' "24GB" as 24 decimal GB rounded down to MiB (22888); the catalog
            # keeps the maker's GB as GiB, as the SDK does. Either way, asking for the maker's
            # figure in GB must match the card.
            maker_gb = inst.gpu_memory_mib // 1024
            assert listed == maker_gb * GB // MIB, (inst.name, listed, inst.gpu_memory_mib)
            assert make("ml.ec2.x", gpu=inst.gpu, mib=listed).meets_gpu_memory(parse_size(f"{maker_gb}GB"))
        compared.append(inst.name)
    # EC2's copy lacks the retired p3; the SDK's file has those. Between them, every entry is checked.
    unchecked = set(catalog.names()) - set(compared) - set(_sdk_gpu_info(monkeypatch))
    assert unchecked == set()


def test_types_the_sdk_knows_in_our_families_are_in_the_catalog(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    import botocore.session
    from sagemaker import instance_types_gpu_info

    training = set(
        botocore.session.get_session().get_service_model("sagemaker").shape_for("TrainingInstanceType").enum
    )
    sdk = instance_types_gpu_info.retrieve("us-east-1")
    ours = set(catalog.names())
    wanted = {n for n in sdk if n in training and n.split(".")[1] in REQUIRED}
    assert wanted - ours == set()


def test_every_entry_is_a_sagemaker_training_instance_type(catalog: Catalog) -> None:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    training = set(model.shape_for("TrainingInstanceType").enum)
    assert [n for n in catalog.names() if n not in training] == []


# --- (b) the bundled data file -----------------------------------------------------------------


def test_required_families_and_types_present(catalog: Catalog) -> None:
    names = set(catalog.names())
    for family, wanted in REQUIRED.items():
        assert wanted <= names, f"{family}: missing {sorted(wanted - names)}"
    assert {i.family for i in catalog} >= set(REQUIRED)


def test_entries_are_sane(catalog: Catalog) -> None:
    assert len(set(catalog.names())) == len(catalog)
    for inst in catalog:
        # An unknown fact is None, and the entry then says why; a known one is a real figure.
        assert inst.price_per_hour is None or inst.price_per_hour > 0, inst.name
        assert inst.vcpus is None or inst.vcpus >= 1
        assert inst.gpus >= 1 and (inst.memory is None or inst.memory > 0)
        if None in (inst.price_per_hour, inst.vcpus, inst.memory):
            assert inst.note, inst.name
        assert inst.family == inst.name.split(".")[1]
        if inst.gpu in EC2_GPU_MIB:
            assert inst.gpu_memory_mib == EC2_GPU_MIB[inst.gpu], inst.name
        else:
            assert inst.gpu in GPU_MEMORY_GB, inst.name
            assert inst.gpu_memory_mib / 1024 in GPU_MEMORY_GB[inst.gpu], inst.name
        assert inst.gpu_memory == inst.gpu_memory_mib * MIB
        # Host memory always exceeds the GPUs' own memory on these types.
        assert inst.memory is None or inst.memory > inst.gpus * 4 * GIB, inst.name


def test_one_gpu_model_per_family_and_prices_rise_with_size(catalog: Catalog) -> None:
    by_family: dict[str, list[InstanceType]] = {}
    for inst in catalog:
        by_family.setdefault(inst.family, []).append(inst)
    for family, members in by_family.items():
        assert len({m.gpu for m in members}) == 1, family
        # Same family, same GPU count: more vCPUs never costs less. Catches a transposed price.
        for gpus in {m.gpus for m in members}:
            same = sorted((m for m in members if m.gpus == gpus), key=lambda m: m.vcpus)
            prices = [m.price_per_hour for m in same if m.price_per_hour is not None]
            assert prices == sorted(prices), (family, gpus, [(m.name, m.price_per_hour) for m in same])


def test_known_specs(catalog: Catalog) -> None:
    p4d = catalog.get("ml.p4d.24xlarge")
    assert p4d is not None
    assert (p4d.gpu, p4d.gpus, p4d.gpu_memory_mib, p4d.vcpus, p4d.memory, p4d.efa) == (
        "A100",
        8,
        40960,
        96,
        1152 * GIB,
        True,
    )
    p5en = catalog.get("ml.p5en.48xlarge")
    assert p5en is not None and (p5en.gpu, p5en.gpu_memory_mib, p5en.efa) == ("H200", 141 * 1024, True)
    assert catalog.get("ml.p3.2xlarge").efa is False  # type: ignore[union-attr]
    assert catalog.get("ml.g4dn.12xlarge").gpus == 4  # type: ignore[union-attr]
    assert catalog.get("ml.g6e.48xlarge").total_gpu_memory == 8 * 48 * GIB  # type: ignore[union-attr]


def test_provenance_present(catalog: Catalog) -> None:
    assert "SageMaker" in catalog.price_source and "us-east-1" in catalog.price_source
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", catalog.price_date)
    assert 0 < catalog.spot_discount_estimate < 1
    assert catalog.region == "us-east-1"
    p4d = catalog.get("ml.p4d.24xlarge")
    assert catalog.spot_price(p4d) == pytest.approx(p4d.price_per_hour * 0.3)  # type: ignore[arg-type]
    # Estimated prices must say so.
    for name in ("ml.p5e.48xlarge", "ml.p5en.48xlarge"):
        note = catalog.get(name).price_note  # type: ignore[union-attr]
        assert note and "unverified" in note


def test_data_file_says_spot_figure_is_an_estimate() -> None:
    text = (REPO / "smtrain" / "plan" / "data" / "instances.yaml").read_text()
    assert re.search(r"spot.*estimate", text, re.IGNORECASE | re.DOTALL)


def test_load_is_cached(catalog: Catalog) -> None:
    assert load_catalog() is load_catalog()


# --- (c) selection -----------------------------------------------------------------------------


def test_cheapest_wins_on_the_bundled_catalog(catalog: Catalog) -> None:
    sel = select_instance(catalog, "A100", 8, parse_size("40GB"))
    assert isinstance(sel, Selection)
    assert sel.instance.name == "ml.p4d.24xlarge"
    assert [c.name for c in sel.candidates] == ["ml.p4d.24xlarge", "ml.p4de.24xlarge"]
    assert sel.reason.startswith(
        "cheapest of 2 types with >= 8 A100 GPUs with >= 40GB each: ml.p4d.24xlarge at $"
    )
    assert "next: ml.p4de.24xlarge at $" in sel.reason

    cheapest_any = min((i for i in catalog if i.price_known), key=lambda i: i.price_per_hour or 0)
    assert select_instance(catalog, None, 1, None).instance == cheapest_any


def test_candidates_are_sorted_by_price(catalog: Catalog) -> None:
    sel = select_instance(catalog, None, 4, None)
    prices = [c.price_per_hour for c in sel.candidates]
    assert prices == sorted(prices)
    assert all(c.gpus >= 4 for c in sel.candidates)
    assert sel.instance == sel.candidates[0]


def test_gpu_model_is_case_insensitive(catalog: Catalog) -> None:
    assert select_instance(catalog, "a100", 8, None).instance.name == "ml.p4d.24xlarge"
    assert select_instance(catalog, "h200", 8, None).instance.gpu == "H200"
    assert select_instance(catalog, "l40s", 1, None).instance.name == "ml.g6e.xlarge"
    # The reason names the model the way the catalog does.
    assert "A100 GPUs" in select_instance(catalog, "a100", 8, None).reason


def test_memory_filter_uses_units(catalog: Catalog) -> None:
    # The "40GB" A100 holds 40960 MiB = 42.9 decimal GB: 40GB, 40GiB and 42GB all find it.
    for asked in ("40GB", "40GiB", "41GB", "42GB", "40960MiB"):
        assert select_instance(catalog, "A100", 8, parse_size(asked)).instance.name == "ml.p4d.24xlarge", asked
    for asked in ("43GB", "41GiB", "80GiB", "80GB", "85GB"):
        assert select_instance(catalog, "A100", 8, parse_size(asked)).instance.name == "ml.p4de.24xlarge", asked
    assert select_instance(catalog, None, 1, parse_size("100GB")).instance.gpu == "H200"
    assert select_instance(catalog, None, 1, parse_size("141GiB")).instance.gpu == "H200"
    assert [i.name for i in catalog.filter(gpu="A100", min_gpu_memory=parse_size("40GiB"))] == [
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
    ]


def test_memory_listed_as_decimal_gb_rounded_down_still_matches_that_gb() -> None:
    # EC2 writes a "24GB" card as 24*10^9 bytes rounded down to whole MiB (22888); a request is
    # compared in whole MiB, so asking for 24GB finds it while 24GiB (24576 MiB) does not.
    card = make("ml.x.a10g", gpu="A10G", gpus=1, mib=22888)
    assert card.meets_gpu_memory(parse_size("24GB"))
    assert not card.meets_gpu_memory(parse_size("24GiB"))
    assert not card.meets_gpu_memory(parse_size("24GB") + MIB)
    assert small(card).filter(min_gpu_memory=parse_size("24GB")) == [card]


def test_reason_shows_the_memory_asked_for_in_its_own_unit(catalog: Catalog) -> None:
    assert ">= 40GiB each" in select_instance(catalog, "A100", 8, parse_size("40GiB")).reason
    assert ">= 40GB each" in select_instance(catalog, "A100", 8, parse_size("40GB")).reason


def test_tie_break_is_deterministic() -> None:
    a = make("ml.zz.a", gpus=8, gpu_gb=40, price=10.0)
    fewer = make("ml.zz.fewer", gpus=4, gpu_gb=40, price=10.0)
    bigger = make("ml.zz.bigger", gpus=4, gpu_gb=80, price=10.0)
    name_b = make("ml.zz.b", gpus=4, gpu_gb=80, price=10.0)
    pricier = make("ml.zz.pricier", gpus=1, gpu_gb=80, price=10.01)
    cat = small(a, pricier, name_b, fewer, bigger)
    sel = select_instance(cat, None, 1, None)
    # price, then fewer GPUs, then more memory per GPU, then name
    assert [c.name for c in sel.candidates] == [
        "ml.zz.b",
        "ml.zz.bigger",
        "ml.zz.fewer",
        "ml.zz.a",
        "ml.zz.pricier",
    ]
    for order in ([bigger, fewer, name_b, a, pricier], [pricier, a, fewer, name_b, bigger]):
        assert select_instance(small(*order), None, 1, None) == sel


def test_min_gpus_is_a_floor() -> None:
    cat = small(
        make("ml.x.one", gpus=1, price=1),
        make("ml.x.four", gpus=4, price=4),
        make("ml.x.eight", gpus=8, price=8),
    )
    assert select_instance(cat, None, 2, None).instance.name == "ml.x.four"
    assert select_instance(cat, None, 5, None).instance.name == "ml.x.eight"
    assert [i.name for i in cat.filter(min_gpus=4)] == ["ml.x.four", "ml.x.eight"]


def test_allowed_restricts_and_is_quoted(catalog: Catalog) -> None:
    smddp = ["ml.p3.16xlarge", "ml.p3dn.24xlarge", "ml.p4d.24xlarge", "ml.p4de.24xlarge"]
    why = "smddp supports only " + ", ".join(smddp)
    sel = select_instance(catalog, None, 8, None, allowed=smddp, allowed_reason=why)
    assert {c.name for c in sel.candidates} == set(smddp)
    assert why in sel.reason
    # Without the list, a cheaper 8-GPU type exists outside it.
    assert select_instance(catalog, None, 8, None).instance.name not in smddp

    with pytest.raises(CatalogError) as err:
        select_instance(catalog, "H100", 8, None, allowed=smddp, allowed_reason=why)
    message = str(err.value)
    assert "H100" in message and why in message and "V100" in message and "A100" in message


def test_single_match_reason(catalog: Catalog) -> None:
    sel = select_instance(catalog, "H100", 1, None, allowed=["ml.p5.4xlarge"])
    assert sel.reason.startswith("the only type with >= 1 H100 GPU: ml.p5.4xlarge at $")


def test_no_match_errors_say_what_comes_closest(catalog: Catalog) -> None:
    with pytest.raises(
        CatalogError, match=r"no instance has 16 A100 GPUs; the most is 8 \(ml\.p4d\.24xlarge"
    ):
        select_instance(catalog, "a100", 16, None)
    with pytest.raises(CatalogError, match=r"no instance has A10 GPUs; GPU models available: .*A10G"):
        select_instance(catalog, "A10", 1, None)
    with pytest.raises(
        CatalogError,
        match=r"no instance with >= 8 A100 GPUs has >= 100GB per GPU; the most is 80GiB \(ml\.p4de\.24xlarge\)",
    ):
        select_instance(catalog, "A100", 8, parse_size("100GB"))
    with pytest.raises(CatalogError, match="none of the allowed instance types is in the catalog"):
        select_instance(catalog, None, 1, None, allowed=["ml.nope.xlarge"])
    with pytest.raises(CatalogError, match="gpus_per_node"):
        select_instance(catalog, None, 0, None)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["A100", "H100", "L4"]),
            st.sampled_from([1, 4, 8]),
            st.sampled_from([24, 40, 80]),  # the maker's GB, i.e. GiB
            st.integers(1, 40),
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([None, "a100", "H100"]),
    st.sampled_from([1, 2, 8]),
    st.sampled_from([None, 24 * GB, 40 * GIB, 80 * GB, 86 * GB]),
    st.randoms(use_true_random=False),
)
def test_selection_is_the_cheapest_match_whatever_the_order(specs, gpu, gpus, memory, rng) -> None:  # type: ignore[no-untyped-def]
    instances = [make(f"ml.h{k}.x", gpu=g, gpus=n, gpu_gb=m, price=p) for k, (g, n, m, p) in enumerate(specs)]
    cat = small(*instances)
    matches = [
        i
        for i in instances
        if (gpu is None or i.gpu.lower() == gpu.lower())
        and i.gpus >= gpus
        and (memory is None or i.gpu_memory_mib * MIB >= memory)
    ]
    if not matches:
        with pytest.raises(CatalogError):
            select_instance(cat, gpu, gpus, memory)
        return
    sel = select_instance(cat, gpu, gpus, memory)
    assert sel.instance.price_per_hour == min(i.price_per_hour for i in matches)
    assert set(sel.candidates) == set(matches)
    shuffled = instances[:]
    rng.shuffle(shuffled)
    assert select_instance(small(*shuffled), gpu, gpus, memory) == sel


# --- (d) names ---------------------------------------------------------------------------------


def test_nearest_names(catalog: Catalog) -> None:
    assert catalog.nearest("ml.p4.24xlarge")[:2] == ["ml.p4d.24xlarge", "ml.p4de.24xlarge"]
    assert catalog.nearest("p3.2xlarge")[0] == "ml.p3.2xlarge"
    assert catalog.nearest("ML.G5.XLARGE")[0] == "ml.g5.xlarge"
    assert catalog.nearest("ml.g5.xlage")[0] == "ml.g5.xlarge"
    assert catalog.nearest("p4d")[0] == "ml.p4d.24xlarge"
    assert len(catalog.nearest("ml.g6.xlarge", n=5)) == 5
    assert catalog.nearest("ml.g6.xlarge", n=1) == ["ml.g6.xlarge"]
    assert catalog.nearest("banana") == []


def test_get_is_exact(catalog: Catalog) -> None:
    assert catalog.get("ml.p4d.24xlarge") is not None
    assert catalog.get("p4d.24xlarge") is None
    assert catalog.get("ml.p4.24xlarge") is None


def test_resolve_instance(catalog: Catalog) -> None:
    assert resolve_instance(catalog, "ml.g5.2xlarge").name == "ml.g5.2xlarge"
    # Spaces around a name, as `--set 'compute.instance_type= ml.g5.12xlarge'` gives them, are no part of it.
    assert resolve_instance(catalog, " ml.g5.12xlarge\t").name == "ml.g5.12xlarge"
    assert catalog.get(" ml.g5.2xlarge ").name == "ml.g5.2xlarge"
    with pytest.raises(CatalogError) as err:
        resolve_instance(catalog, "ml.p4.24xlarge")
    assert str(err.value).startswith("unknown instance type 'ml.p4.24xlarge'")
    assert "nearest: ml.p4d.24xlarge, ml.p4de.24xlarge" in str(err.value)
    with pytest.raises(CatalogError, match="nearest: ml.p3.2xlarge"):
        resolve_instance(catalog, "p3.2xlarge")
    long_name = "ml." + "x" * 300
    with pytest.raises(CatalogError) as err:
        resolve_instance(catalog, long_name)
    quoted = repr(long_name)
    # what was written, cut to 80 characters
    assert str(err.value).startswith(f"unknown instance type {quoted[:75]}...{quoted[-2:]} (not in the GPU catalog)")
    with pytest.raises(CatalogError, match="smtrain instances"):
        resolve_instance(catalog, "banana")


# --- (e) a user's catalog and prices files -----------------------------------------------------


USER_CATALOG = """\
instances:
  ml.g5.xlarge: {gpu: A10G, gpus: 1, gpu_memory_mib: 24576, vcpus: 4, memory: 16GiB, efa: false, price: 0.5}
  ml.p6-b200.48xlarge:
    gpu: B200
    gpus: 8
    gpu_memory_mib: 184320
    vcpus: 192
    memory: 2048GiB
    efa: true
    price: 120.0
    price_note: our negotiated rate
"""


def test_user_catalog_adds_and_replaces(tmp_path: Path, catalog: Catalog) -> None:
    merged = load_catalog(catalog_path=write(tmp_path / "mine.yaml", USER_CATALOG))
    assert len(merged) == len(catalog)  # both entries replace bundled ones
    assert merged.get("ml.g5.xlarge").price_per_hour == 0.5  # type: ignore[union-attr]
    b200 = merged.get("ml.p6-b200.48xlarge")
    assert b200 is not None and (b200.family, b200.gpu, b200.gpu_memory_mib, b200.price_note) == (
        "p6-b200",
        "B200",
        180 * 1024,
        "our negotiated rate",
    )
    assert b200.price_per_hour == 120.0 and catalog.get(b200.name).price_per_hour is None  # type: ignore[union-attr]
    assert merged.names() == catalog.names()  # replaced in place
    assert merged.price_date == catalog.price_date
    assert catalog.price_source in merged.price_source and "mine.yaml" in merged.price_source
    # A price of its own does not make a Blackwell type one that SageMaker's TensorFlow images drive.
    with pytest.raises(CatalogError, match="cannot drive Blackwell GPUs: ml.p6-b200.48xlarge"):
        select_instance(merged, "b200", 8, None)
    added = load_catalog(catalog_path=write(tmp_path / "new.yaml", USER_CATALOG.replace("p6-b200", "p9")))
    assert len(added) == len(catalog) + 1 and added.names()[-1] == "ml.p9.48xlarge"  # new ones after
    # The bundled catalog is untouched by the merge.
    assert load_catalog().get("ml.g5.xlarge").price_per_hour == catalog.get("ml.g5.xlarge").price_per_hour  # type: ignore[union-attr]


def test_user_catalog_source_and_date_apply(tmp_path: Path) -> None:
    text = "source: our price sheet\ndate: 2027-02-03\nspot_discount_estimate: 0.5\n" + USER_CATALOG
    merged = load_catalog(catalog_path=write(tmp_path / "mine.yaml", text))
    assert (merged.price_source, merged.price_date, merged.spot_discount_estimate) == (
        "our price sheet",
        "2027-02-03",
        0.5,
    )


def test_prices_file_yaml_and_json(tmp_path: Path, catalog: Catalog) -> None:
    y = load_catalog(prices_path=write(tmp_path / "prices.yaml", "ml.p4d.24xlarge: 30.5\nml.g5.xlarge: 1\n"))
    assert y.get("ml.p4d.24xlarge").price_per_hour == 30.5  # type: ignore[union-attr]
    assert y.get("ml.g5.xlarge").price_per_hour == 1.0  # type: ignore[union-attr]
    assert y.get("ml.p4d.24xlarge").price_note == "from prices.yaml"  # type: ignore[union-attr]
    assert y.get("ml.p5.48xlarge") == catalog.get("ml.p5.48xlarge")
    assert "2 prices from prices.yaml" in y.price_source

    j = load_catalog(
        prices_path=write(
            tmp_path / "p.json",
            json.dumps({"source": "AWS Price List API", "date": "2027-01-01", "ml.p5.48xlarge": 55}),
        )
    )
    assert j.get("ml.p5.48xlarge").price_per_hour == 55.0  # type: ignore[union-attr]
    assert (j.price_source, j.price_date) == ("AWS Price List API", "2027-01-01")
    # A cheaper price changes the choice.
    cheap = load_catalog(prices_path=write(tmp_path / "cheap.yaml", "ml.p4de.24xlarge: 1.0\n"))
    assert select_instance(cheap, "A100", 8, None).instance.name == "ml.p4de.24xlarge"


def test_both_files_together(tmp_path: Path) -> None:
    both = load_catalog(
        catalog_path=write(tmp_path / "mine.yaml", USER_CATALOG),
        prices_path=write(tmp_path / "prices.yaml", "ml.p6-b200.48xlarge: 99\n"),
    )
    assert both.get("ml.p6-b200.48xlarge").price_per_hour == 99.0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kind", "name", "text", "expected"),
    [
        (
            "prices",
            "p.yaml",
            "ml.p4.24xlarge: 3\n",
            r"p\.yaml: unknown instance type 'ml\.p4\.24xlarge'; nearest: ml\.p4d\.24xlarge",
        ),
        (
            "prices",
            "p.yaml",
            "ml.p4d.24xlarge: -1\n",
            r"p\.yaml:1: instance 'ml\.p4d\.24xlarge': price cannot be negative",
        ),
        (
            "prices",
            "p.yaml",
            "ml.p4d.24xlarge: cheap\n",
            r"p\.yaml:1: instance 'ml\.p4d\.24xlarge': price must be a number",
        ),
        ("prices", "p.yaml", "- 1\n- 2\n", r"p\.yaml: expected a mapping"),
        ("prices", "p.json", '{"ml.p4d.24xlarge": 3,}', r"p\.json:1:\d+: not valid JSON"),
        ("catalog", "c.yaml", "instances:\n  ml.x.y: {gpu: A100\n", r"c\.yaml:\d+:\d+: not valid YAML"),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.x.y: {gpu: A100, gpus: 1}\n",
            r"c\.yaml: instance 'ml\.x\.y': missing field 'gpu_memory_mib'",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.x.y: {gpu: A100, gpus: 1, gpu_memory: 40GB, vcpus: 8, memory: 1GiB, efa: no, price: 1,"
            " gpu_mem: 2}\n",
            r"c\.yaml: instance 'ml\.x\.y': unknown field 'gpu_mem'",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.x.y: {gpu: A100, gpus: 1, gpu_memory: 40GB, vcpus: 8, memory: 1GiB, efa: false, price: -2}\n",
            r"c\.yaml:2: instance 'ml\.x\.y': price cannot be negative",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.x.y: {gpu: A100, gpus: true, gpu_memory: 40GB, vcpus: 8, memory: 1GiB, efa: false,"
            " price: 1}\n",
            r"c\.yaml:2: instance 'ml\.x\.y': 'gpus' must be a whole number",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.x.y: {gpu: A100, gpus: 1, gpu_memory: 4XB, vcpus: 8, memory: 1GiB, efa: false, price: 1}\n",
            r"c\.yaml:2: instance 'ml\.x\.y': 'gpu_memory': '4XB' is not a size",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.x.y: {gpu: A100, gpus: 1, gpu_memory: 80, vcpus: 8, memory: 1GiB, efa: false, price: 1}\n",
            r"c\.yaml:2: instance 'ml\.x\.y': 'gpu_memory' needs a unit",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.x.y: {gpu: A100, gpus: 1, gpu_memory_mib: 40GB, vcpus: 8, memory: 1GiB, efa: false,"
            " price: 1}\n",
            r"c\.yaml:2: instance 'ml\.x\.y': 'gpu_memory_mib' must be a whole number of MiB",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.x.y: {gpu: A100, gpus: 1, gpu_memory_mib: 40960, gpu_memory: 40GB, vcpus: 8,"
            " memory: 1GiB, efa: false, price: 1}\n",
            r"c\.yaml: instance 'ml\.x\.y': give 'gpu_memory_mib' or the old 'gpu_memory', not both",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.p4d.24xlarge: {gpu: A100, gpus: 8, gpu_memory_mib: 40960, vcpus: 96, memory: 1152GiB,"
            " efa: true, price: 25, region_prices: {eu-west: 30}}\n",
            r"c\.yaml: instance 'ml\.p4d\.24xlarge': region_prices: 'eu-west' is not an AWS region name",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.p4d.24xlarge: {gpu: A100, gpus: 8, gpu_memory_mib: 40960, vcpus: 96, memory: 1152GiB,"
            " efa: true, price: 25, region_prices: {us-east-1: 30}}\n",
            r"region_prices: us-east-1 is the catalog's own region: its price is 'price'",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.p4d.24xlarge: {gpu: A100, gpus: 8, gpu_memory_mib: 40960, vcpus: 96, memory: 1152GiB,"
            " efa: true, price: 25, region_prices: {eu-west-1: lots}}\n",
            r"c\.yaml:2: instance 'ml\.p4d\.24xlarge' in eu-west-1: price must be a number",
        ),
        (
            "catalog",
            "c.yaml",
            "region: eu-west-1\n",
            r"c\.yaml: 'region' is eu-west-1, but the bundled prices are for us-east-1",
        ),
        ("prices", "p.yaml", "region: eu-west\nml.p4d.24xlarge: 3\n", r"p\.yaml: 'eu-west' is not an AWS region"),
        ("catalog", "c.yaml", "currency: EUR\n", r"c\.yaml: prices must be in USD"),
        (
            "catalog",
            "c.yaml",
            "instances:\n  p4d.24xlarge: {}\n",
            r"c\.yaml: instance 'p4d\.24xlarge': names take SageMaker's form",
        ),
        (
            "catalog",
            "c.yaml",
            "instances:\n  ml.a.b: {}\n  ml.a.b: {}\n",
            r"c\.yaml:3: 'ml\.a\.b' appears twice",
        ),
        ("catalog", "c.yaml", "instance:\n  ml.a.b: {}\n", r"c\.yaml: unknown top-level key 'instance'"),
        (
            "catalog",
            "c.yaml",
            "spot_discount_estimate: 30\n",
            r"c\.yaml: 'spot_discount_estimate' must be a fraction",
        ),
        ("catalog", "c.yaml", "just text\n", r"c\.yaml: expected a mapping"),
    ],
)
def test_bad_files_name_the_file_and_entry(
    tmp_path: Path, kind: str, name: str, text: str, expected: str
) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(CatalogError, match=expected) as err:
        if kind == "prices":
            load_catalog(prices_path=path)
        else:
            load_catalog(catalog_path=path)
    assert str(path) in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"nope\.yaml: no such file"):
        load_catalog(catalog_path=tmp_path / "nope.yaml")
    with pytest.raises(CatalogError, match=r"gone\.json: no such file"):
        load_catalog(prices_path=tmp_path / "gone.json")


def test_catalog_error_is_a_value_error() -> None:
    assert issubclass(CatalogError, ValueError)


_HUGE, _LONG = "1" + "0" * 400, "1" + "0" * 5000  # past a float; past Python's 4300-digit int limit
_ENTRY = "instances:\n  ml.x.y:\n    gpu: A100\n    gpus: 1\n    gpu_memory_mib: {mib}\n    vcpus: 8\n" \
         "    memory: 64GiB\n    efa: false\n    price: {price}\n"


@pytest.mark.parametrize(
    ("kind", "name", "text", "expected"),
    [
        ("prices", "p.yaml", f"ml.g5.xlarge: {_HUGE}\n", r"p\.yaml:1: instance 'ml\.g5\.xlarge': price 1000.*past any"),
        ("prices", "p.yaml", f"ml.g5.xlarge: {_LONG}\n", r"p\.yaml:1: a number of 5001 digits"),
        ("prices", "p.yaml", "region: us-east-1\nml.g5.xlarge: 1.0e+999\n", r"p\.yaml:2: .*not inf"),
        ("prices", "p.yaml", "ml.g5.xlarge: .nan\n", r"p\.yaml:1: .*not nan"),
        ("prices", "p.yaml", "ml.g5.xlarge: 20000\n", r"p\.yaml:1: .*price 20000 USD per hour is past any"),
        ("prices", "p.json", f'{{"ml.g5.xlarge": {_HUGE}}}', r"p\.json:1: instance 'ml\.g5\.xlarge': price 1000"),
        ("prices", "p.json", f'{{"source": "x",\n "ml.g5.xlarge": {_LONG}}}', r"p\.json:2: a number of 5001 digits"),
        ("prices", "p.json", '{"source": "x",\n "ml.g5.xlarge": 1e999}', r"p\.json:2: .*not inf"),
        ("prices", "p.json", '{"ml.g5.xlarge": -Infinity}', r"p\.json:1: .*not -inf"),
        ("prices", "p.json", '{"ml.g5.xlarge": NaN}', r"p\.json:1: .*not nan"),
        ("catalog", "c.yaml", _ENTRY.format(mib=_HUGE, price=1), r"c\.yaml:5: .*'gpu_memory_mib' must be .* to 16777216"),
        ("catalog", "c.yaml", _ENTRY.format(mib=_LONG, price=1), r"c\.yaml:5: a number of 5001 digits"),
        ("catalog", "c.yaml", _ENTRY.format(mib=2**24 + 1, price=1), r"c\.yaml:5: .*'gpu_memory_mib'"),
        ("catalog", "c.yaml", _ENTRY.format(mib=40960, price=_HUGE), r"c\.yaml:9: instance 'ml\.x\.y': price 1000"),
        ("catalog", "c.yaml", _ENTRY.format(mib=40960, price=_LONG), r"c\.yaml:9: a number of 5001 digits"),
        ("catalog", "c.yaml", _ENTRY.format(mib=40960, price=".inf"), r"c\.yaml:9: .*not inf"),
        ("catalog", "c.yaml", _ENTRY.format(mib=40960, price="1"), None),  # the bounds leave real figures alone
        ("catalog", "c.yaml", _ENTRY.format(mib=40960, price="1.0e-320"), None),
        ("catalog", "c.yaml", _ENTRY.format(mib=40960, price="-0.0"), None),
        ("catalog", "c.yaml", _ENTRY.format(mib=40960, price=1) + "    region_prices: {eu-west-1: 1.0e+400}\n",
         r"c\.yaml:10: instance 'ml\.x\.y' in eu-west-1: .*not inf"),
        ("catalog", "c.yaml", _ENTRY.format(mib=40960, price=1).replace("gpus: 1", f"gpus: {_HUGE}"),
         r"c\.yaml:4: .*'gpus' must be"),
        ("catalog", "c.yaml", _ENTRY.format(mib=40960, price=1).replace("gpu_memory_mib: 40960",
                                                                        "gpu_memory: 100TB"),
         r"c\.yaml:5: .*'gpu_memory' must be from 1MiB to"),
    ],
)
def test_numbers_past_a_float_or_any_real_figure_are_refused_at_their_line(
    tmp_path: Path, kind: str, name: str, text: str, expected: str | None
) -> None:
    path = write(tmp_path / name, text)
    load = (lambda: load_catalog(prices_path=path)) if kind == "prices" else (lambda: load_catalog(catalog_path=path))
    if expected is None:
        assert load().get("ml.x.y") is not None
        return
    with pytest.raises(CatalogError, match=expected) as err:
        load()
    assert str(err.value).startswith(str(path)) and len(str(err.value)) < 300, err.value


# --- (e2) the old gpu_memory field --------------------------------------------------------------


OLD_FIELD_CATALOG = """\
instances:
  ml.p6-b200.48xlarge:
    {gpu: B200, gpus: 8, gpu_memory: 180GB, vcpus: 192, memory: 2048GiB, efa: true, price: 120.0}
  ml.x.binary: {gpu: X1, gpus: 1, gpu_memory: 40GiB, vcpus: 8, memory: 64GiB, efa: false, price: 1}
  ml.x.mib: {gpu: X1, gpus: 1, gpu_memory: 40960MiB, vcpus: 8, memory: 64GiB, efa: false, price: 1}
"""


def test_old_gpu_memory_field_reads_the_makers_gb_as_gib(tmp_path: Path) -> None:
    merged = load_catalog(catalog_path=write(tmp_path / "old.yaml", OLD_FIELD_CATALOG))
    assert merged.get("ml.p6-b200.48xlarge").gpu_memory_mib == 180 * 1024  # type: ignore[union-attr]
    assert merged.get("ml.x.binary").gpu_memory_mib == 40960  # type: ignore[union-attr]
    assert merged.get("ml.x.mib").gpu_memory_mib == 40960  # type: ignore[union-attr]
    # The conversion is said once per file, with what to write instead.
    (note,) = merged.notes
    assert str(tmp_path / "old.yaml") in note
    assert "ml.p6-b200.48xlarge: gpu_memory: 180GB -> gpu_memory_mib: 184320" in note
    assert "3 entries" in note and "GiB" in note
    assert load_catalog().notes == ()


# --- (f) prices per region ----------------------------------------------------------------------


def test_price_outside_the_catalogs_region_says_so(catalog: Catalog) -> None:
    p4d = catalog.get("ml.p4d.24xlarge")
    assert p4d is not None
    here = catalog.price(p4d, "us-east-1")
    assert (here.per_hour, here.region, here.region_note) == (p4d.price_per_hour, "us-east-1", None)
    away = catalog.price(p4d, "eu-west-1")
    assert (away.per_hour, away.region) == (p4d.price_per_hour, "us-east-1")
    assert away.region_note == "price for us-east-1; eu-west-1 unknown"
    assert catalog.price(p4d, None).region_note is None
    # No bundled entry carries a price for another region: no source backs one.
    assert all(i.region_prices == () for i in catalog)


REGIONAL_CATALOG = """\
instances:
  ml.p4de.24xlarge:
    {gpu: A100, gpus: 8, gpu_memory_mib: 81920, vcpus: 96, memory: 1152GiB, efa: true, price: 31.5641,
     region_prices: {eu-west-1: 20.0}}
"""


def test_region_prices_are_used_in_their_region(tmp_path: Path) -> None:
    cat = load_catalog(catalog_path=write(tmp_path / "eu.yaml", REGIONAL_CATALOG))
    p4de = cat.get("ml.p4de.24xlarge")
    assert p4de is not None and p4de.region_prices == (RegionPrice("eu-west-1", 20.0, None),)
    eu = cat.price(p4de, "eu-west-1")
    assert (eu.per_hour, eu.region, eu.region_note) == (20.0, "eu-west-1", None)
    # The choice follows the prices of the job's region.
    assert select_instance(cat, "A100", 8, None, region="eu-west-1").instance.name == "ml.p4de.24xlarge"
    assert "at $20.00/h" in select_instance(cat, "A100", 8, None, region="eu-west-1").reason
    assert select_instance(cat, "A100", 8, None, region="us-east-1").instance.name == "ml.p4d.24xlarge"


def test_prices_file_for_another_region(tmp_path: Path, catalog: Catalog) -> None:
    cat = load_catalog(prices_path=write(tmp_path / "eu.yaml", "region: eu-west-1\nml.p4d.24xlarge: 28.0\n"))
    p4d = cat.get("ml.p4d.24xlarge")
    assert p4d is not None and p4d.price_per_hour == catalog.get("ml.p4d.24xlarge").price_per_hour  # type: ignore[union-attr]
    eu = cat.price(p4d, "eu-west-1")
    assert (eu.per_hour, eu.region, eu.note) == (28.0, "eu-west-1", "from eu.yaml")
    assert "1 eu-west-1 price from eu.yaml" in cat.price_source
    same = load_catalog(prices_path=write(tmp_path / "us.yaml", "region: us-east-1\nml.p4d.24xlarge: 9\n"))
    assert same.get("ml.p4d.24xlarge").price_per_hour == 9.0  # type: ignore[union-attr]


# --- (g) price notes and estimates ---------------------------------------------------------------


def test_estimates_are_marked(catalog: Catalog) -> None:
    for name in ("ml.p5e.48xlarge", "ml.p5en.48xlarge"):
        inst = catalog.get(name)
        assert inst is not None and inst.price_is_estimate, name
        price = catalog.price(inst, "us-east-1")
        assert price.is_estimate and price.note == inst.price_note
    assert not catalog.get("ml.p4d.24xlarge").price_is_estimate  # type: ignore[union-attr]
    assert not catalog.get("ml.g5.xlarge").price_is_estimate  # type: ignore[union-attr]
    # A reason that quotes an estimate says it is one.
    reason = select_instance(catalog, "H200", 8, None).reason
    assert "$72.79/h (estimate)" in reason


# --- (h) why nothing matches -------------------------------------------------------------------


def test_no_match_reason_names_what_exists(catalog: Catalog) -> None:
    reason = no_match_reason(catalog, "MI300X", 1, None)
    assert reason.startswith("no instance has MI300X GPUs; GPU models available: ")
    assert all(model in reason for model in catalog.gpu_models())
    assert "the most is 8" in no_match_reason(catalog, "A100", 16, None)
    assert "the most is 141GiB" in no_match_reason(catalog, "H200", 1, parse_size("200GB"))
    assert "the most is 268.6GiB" in no_match_reason(catalog, None, 1, parse_size("300GB"))


# --- (i) start-up cost -------------------------------------------------------------------------


def test_catalog_does_not_import_heavy_packages() -> None:
    code = (
        "import sys, json\n"
        "import smtrain.plan.catalog as c, smtrain.plan.catalog_files as f, smtrain.plan.instance_choice as i\n"
        "cat = f.load_catalog()\n"
        "i.select_instance(cat, 'A100', 8, None)\n"
        "c.resolve_instance(cat, 'ml.p4d.24xlarge')\n"
        "heavy = ('sagemaker', 'boto3', 'botocore', 'tensorflow')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
