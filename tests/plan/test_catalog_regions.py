"""Regions, unknown facts and Blackwell in the catalog: what `instance_type: auto` never picks, what an
explicit type in the wrong region gets (exit 2 at compute.instance_type), `instances --region`, and a
user's catalog giving regions of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtrain.plan.catalog import Catalog, CatalogError, availability
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.instance_choice import explicit_instance, select_instance
from smtrain.spec.units import parse_size
from tests.spec.inprocess import run
from tests.support.specfiles import write_spec


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- regions -----------------------------------------------------------------------------------


def test_bundled_regions_and_their_scope(catalog: Catalog) -> None:
    p4de = catalog.get("ml.p4de.24xlarge")
    assert p4de is not None and p4de.regions and "us-east-1" in p4de.regions
    assert p4de.offered_in("us-east-1") is True
    assert p4de.offered_in("eu-west-1") is False  # in the source's scope, not listed
    assert p4de.offered_in("cn-north-1") is None  # outside the snapshot's regions: unknown
    assert p4de.offered_in(None) is None
    p3 = catalog.get("ml.p3.2xlarge")
    assert p3 is not None and p3.regions is None and p3.offered_in("eu-west-1") is None
    assert catalog.regions_source and "moto" in catalog.regions_source


def test_auto_picks_only_what_the_region_offers(catalog: Catalog) -> None:
    home = select_instance(catalog, "A100", 8, None, region="us-east-1")
    assert [c.name for c in home.candidates] == ["ml.p4d.24xlarge", "ml.p4de.24xlarge"]
    assert "not picked" not in home.reason
    # Hopper in us-east-1: p5e is not offered there (EC2's offerings), so the plan never rents it there.
    h200 = select_instance(catalog, "H200", 8, None, region="us-east-1")
    assert [c.name for c in h200.candidates] == ["ml.p5en.48xlarge"]
    assert select_instance(catalog, "H200", 8, None, region="us-west-2").candidates[0].name == "ml.p5e.48xlarge"


def test_auto_in_a_region_without_the_gpu_says_where_it_is(catalog: Catalog) -> None:
    sel = select_instance(catalog, "A100", 8, None, region="eu-west-1")
    assert sel.instance.name == "ml.p4d.24xlarge"
    assert "not picked: not offered in eu-west-1: ml.p4de.24xlarge" in sel.reason
    with pytest.raises(CatalogError, match=r"no instance type with >= 8 A100 GPUs with >= 80GiB each can be "
                                           r"picked: not offered in eu-west-1: ml.p4de.24xlarge"):
        select_instance(catalog, "A100", 8, parse_size("80GiB"), region="eu-west-1")
    # A region the source does not cover: nothing is known there, so nothing is ruled out, and the
    # reason says so.
    far = select_instance(catalog, "A100", 8, parse_size("80GiB"), region="cn-north-1")
    assert far.instance.name == "ml.p4de.24xlarge"
    assert "whether cn-north-1 offers ml.p4de.24xlarge for training is unknown" in far.reason


def test_explicit_type_not_offered_in_the_region_is_an_error(catalog: Catalog) -> None:
    with pytest.raises(CatalogError) as err:
        explicit_instance(catalog, "ml.p4de.24xlarge", "eu-west-1")
    message = str(err.value)
    assert message.startswith("ml.p4de.24xlarge is not offered for training in eu-west-1; regions that offer it: "
                              "ap-northeast-1, ap-southeast-1, eu-central-1, il-central-1, us-east-1, us-west-2")
    assert "--catalog" in message
    instance, reason = explicit_instance(catalog, "ml.p3.2xlarge", "eu-west-1")
    assert reason == "as the spec asks; whether eu-west-1 offers it for training is unknown"
    assert explicit_instance(catalog, "ml.p4de.24xlarge", "us-east-1")[1] == "as the spec asks"


def test_plan_refuses_the_type_at_its_line(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, {"region": "eu-west-1", "compute": {"instance_type": "ml.p4de.24xlarge"}})
    line = next(n for n, text in enumerate(spec.read_text().splitlines(), 1) if "instance_type:" in text)
    result = run("plan", str(spec))
    assert result.code == 2, result.output
    assert f"error: {spec}:{line}:" in result.stderr
    assert "compute.instance_type: ml.p4de.24xlarge is not offered for training in eu-west-1; regions that offer " \
           "it: ap-northeast-1" in result.stderr
    assert result.stdout == ""
    ok = run("plan", str(spec), "--set", "region=us-west-2")
    assert ok.code == 0, ok.output


def test_instances_region_filter(tmp_path: Path) -> None:
    data = json.loads(run("instances", "--region", "eu-west-1", "-o", "json").stdout)
    names = {i["type"] for i in data["instances"]}
    assert data["region"] == "eu-west-1"
    assert "ml.p4d.24xlarge" in names and "ml.p4de.24xlarge" not in names and "ml.g6.xlarge" not in names
    by_name = {i["type"]: i for i in data["instances"]}
    assert by_name["ml.p3.2xlarge"]["offered_in_region"] is None  # unknown: listed, marked
    assert by_name["ml.p4d.24xlarge"]["offered_in_region"] is True
    assert by_name["ml.p4d.24xlarge"]["region_note"] == "price for us-east-1; eu-west-1 unknown"
    everything = json.loads(run("instances", "-o", "json").stdout)["instances"]
    assert len(everything) > len(names)

    text = run("instances", "--region", "eu-west-1", "--gpu", "V100").stdout
    assert "in eu-west-1" in text and "?" in text

    refused = run("instances", "--gpu", "H200", "--region", "eu-west-1")
    assert refused.code == 2 and refused.stdout == ""
    assert "no instance type matches --gpu H200 --region eu-west-1: none of the 2 matching types is offered in " \
           "eu-west-1; they are offered in " in refused.stderr
    assert run("instances", "--region", "Europe").code == 2


def test_region_prices_follow_instances_region(tmp_path: Path) -> None:
    prices = write(tmp_path / "eu.yaml", "region: eu-west-1\nml.p4d.24xlarge: 20.0\n")
    data = json.loads(run("--prices", str(prices), "instances", "--gpu", "A100", "--region", "eu-west-1",
                          "-o", "json").stdout)
    (p4d,) = data["instances"]
    assert (p4d["price_per_hour"], p4d["price_region"], p4d["region_note"]) == (20.0, "eu-west-1", None)


# --- a user's catalog with regions ---------------------------------------------------------------


def test_user_catalog_regions_override(tmp_path: Path, catalog: Catalog) -> None:
    mine = write(tmp_path / "mine.yaml", """\
instances:
  ml.p4de.24xlarge:
    {gpu: A100, gpus: 8, gpu_memory_mib: 81920, vcpus: 96, memory: 1152GiB, efa: true, price: 31.5641,
     regions: [eu-west-1]}
  ml.g6.xlarge: {gpu: L4, gpus: 1, gpu_memory_mib: 24576, vcpus: 4, memory: 16GiB, efa: false, price: 1.1267,
                 regions: unknown}
""")
    merged = load_catalog(catalog_path=mine)
    p4de = merged.get("ml.p4de.24xlarge")
    assert p4de is not None and p4de.regions == ("eu-west-1",) and p4de.regions_scope is None
    assert explicit_instance(merged, "ml.p4de.24xlarge", "eu-west-1")[0] is p4de
    # A user's list speaks for every region: one it leaves out is refused, wherever that is.
    with pytest.raises(CatalogError, match="not offered for training in cn-north-1; regions that offer it: eu-west-1"):
        explicit_instance(merged, "ml.p4de.24xlarge", "cn-north-1")
    assert merged.get("ml.g6.xlarge").offered_in("eu-west-1") is None  # type: ignore[union-attr]
    assert select_instance(merged, "A100", 8, parse_size("80GiB"), region="eu-west-1").instance is p4de

    spec = write_spec(tmp_path, {"region": "eu-west-1", "compute": {"instance_type": "ml.p4de.24xlarge"}})
    assert run("--catalog", str(mine), "plan", str(spec)).code == 0
    assert run("plan", str(spec)).code == 2


def test_bad_regions_name_the_entry(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "instances:\n  ml.g6.xlarge: {gpu: L4, gpus: 1, gpu_memory_mib: 24576, "
                                       "vcpus: 4, memory: 16GiB, efa: false, price: 1.0, regions: [Europe]}\n")
    with pytest.raises(CatalogError, match=r"instance 'ml.g6.xlarge': regions: 'Europe' is not an AWS region"):
        load_catalog(catalog_path=bad)
    empty = write(tmp_path / "empty.yaml", bad.read_text().replace("[Europe]", "[]"))
    with pytest.raises(CatalogError, match="give a list of AWS regions"):
        load_catalog(catalog_path=empty)


# --- unknown facts -----------------------------------------------------------------------------


UNKNOWN_FACTS = """\
instances:
  ml.g6.xlarge:
    {gpu: L4, gpus: 1, gpu_memory_mib: 24576, vcpus: unknown, memory: unknown, efa: false, price: unknown,
     note: "a new size: no source gives its figures yet"}
"""


def test_unknown_facts_are_read_as_unknown(tmp_path: Path) -> None:
    merged = load_catalog(catalog_path=write(tmp_path / "mine.yaml", UNKNOWN_FACTS))
    g6 = merged.get("ml.g6.xlarge")
    assert g6 is not None and (g6.vcpus, g6.memory, g6.price_per_hour) == (None, None, None)
    assert g6.note == "a new size: no source gives its figures yet"
    assert merged.price(g6).per_hour is None and merged.spot_price(g6) is None
    # Never picked: the next L4 type is, and the reason says why this one was not.
    sel = select_instance(merged, "L4", 1, None, region="us-east-1")
    assert sel.instance.name == "ml.g6.2xlarge"
    assert "not picked: price unknown: ml.g6.xlarge" in sel.reason

    data = json.loads(run("--catalog", str(tmp_path / "mine.yaml"), "instances", "--gpu", "L4", "-o", "json").stdout)
    first = data["instances"][-1]  # an unknown price sorts last
    assert (first["type"], first["vcpus"], first["memory_gib"], first["price_per_hour"]) == (
        "ml.g6.xlarge", None, None, None)
    text = run("--catalog", str(tmp_path / "mine.yaml"), "instances", "--gpu", "L4").stdout
    row = next(line for line in text.splitlines() if "ml.g6.xlarge" in line)
    assert row.count("?") == 3  # vcpus, memory, price


def test_an_unknown_fact_needs_a_note(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", UNKNOWN_FACTS.replace(',\n     note: "a new size: no source gives its '
                                                             'figures yet"', ""))
    with pytest.raises(CatalogError, match=r"'ml.g6.xlarge': vcpus, memory, price unknown: add a 'note'"):
        load_catalog(catalog_path=bad)


def test_plan_with_an_unknown_price_says_so(tmp_path: Path) -> None:
    mine = write(tmp_path / "mine.yaml", UNKNOWN_FACTS)
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g6.xlarge"}})
    result = run("--catalog", str(mine), "plan", str(spec))
    assert result.code == 0, result.output
    assert "cost          unknown: the catalog has no price for ml.g6.xlarge" in result.stdout
    cost = json.loads(run("--catalog", str(mine), "plan", str(spec), "-o", "json").stdout)["cost_usd"]
    assert (cost["per_hour"], cost["max_for_run"]) == (None, None)


# --- Blackwell ---------------------------------------------------------------------------------


def test_blackwell_is_listed_but_never_auto_picked(catalog: Catalog, tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot drive Blackwell GPUs: ml.p6-b200.48xlarge"):
        select_instance(catalog, "B200", 8, None)
    # Even priced (a user's rate) and the only type with enough memory, a Blackwell type is not picked.
    priced = write(tmp_path / "priced.yaml", """\
instances:
  ml.g7e.2xlarge: {gpu: RTX PRO Server 6000, gpus: 1, gpu_memory_mib: 98304, vcpus: 8, memory: 64GiB, efa: false,
                   price: 0.01}
""")
    merged = load_catalog(catalog_path=priced)
    cheapest = select_instance(merged, None, 1, None, region="us-east-1")
    assert cheapest.instance.tensorflow_drives is True and cheapest.instance.name != "ml.g7e.2xlarge"
    assert "SageMaker's TensorFlow images cannot drive Blackwell GPUs: " in cheapest.reason
    with pytest.raises(CatalogError, match="cannot drive Blackwell GPUs: ml.g7e.2xlarge"):
        select_instance(merged, "RTX PRO Server 6000", 1, None)
    with pytest.raises(CatalogError, match="cannot drive Blackwell GPUs: ml.p6-b200.48xlarge, ml.p6-b300.48xlarge"):
        select_instance(merged, None, 1, parse_size("150GiB"))

    data = json.loads(run("instances", "--gpu", "B200", "-o", "json").stdout)
    (b200,) = data["instances"]
    assert (b200["tensorflow"], b200["compute_capability"], b200["price_per_hour"]) == (False, "10.0", None)
    assert "tensorflow/tensorflow#89272" in b200["tensorflow_note"]
    text = run("instances", "--gpu", "B200").stdout
    assert "no [" in text and "cannot drive the B200" in text
    a100 = [line for line in run("instances", "--gpu", "A100").stdout.splitlines() if "ml.p4d.24xlarge" in line]
    assert len(a100) == 1 and a100[0].split("│")[8].strip() == "yes"  # said, not left blank


def test_an_explicit_blackwell_type_gets_a_warning(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.p6-b200.48xlarge"}})
    result = run("plan", str(spec))
    assert result.code == 0, result.output
    assert "compute.instance_type: ml.p6-b200.48xlarge: SageMaker's TensorFlow images cannot drive the B200" \
           in result.stdout
    assert "cost          unknown" in result.stdout
    own = write_spec(tmp_path, {"compute": {"instance_type": "ml.p6-b200.48xlarge"},
                                "tensorflow": {"image_uri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/tf:b"}},
                     name="own.yaml")
    assert "your tensorflow.image_uri must carry a TensorFlow built for it" in run("plan", str(own)).stdout


def test_availability_for_fallback_lists(catalog: Catalog) -> None:
    p6 = availability(catalog, "ml.p6-b200.48xlarge", "eu-west-1")
    assert (p6.in_catalog, p6.offered, p6.tensorflow) == (True, False, False)
    assert p6.problem and "not offered for training in eu-west-1" in p6.problem
    assert any("cannot drive" in n for n in p6.notes) and any("price unknown" in n for n in p6.notes)
    p2 = availability(catalog, "ml.p2.xlarge", "us-east-1")
    assert (p2.in_catalog, p2.problem is not None) == (False, True) and p2.excluded and "K80" in p2.excluded
    g5 = availability(catalog, "ml.g5.xlarge", "us-east-1")
    assert (g5.offered, g5.tensorflow, g5.problem, g5.notes) == (True, True, None, ())
    typo = availability(catalog, "ml.g5.xlarg", None)
    assert typo.problem and "nearest: ml.g5.xlarge" in typo.problem
