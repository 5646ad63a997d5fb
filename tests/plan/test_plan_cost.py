"""The plan's instance choice and cost as the catalog prices them: memory units, the price's region, price notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smtrain.plan.build import Plan, build_plan
from smtrain.plan.catalog import Catalog
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from tests.support.specfiles import write_spec

CATALOG = load_catalog()
AUTO_A100 = {"compute": {"gpu": "A100", "gpus_per_node": 8}}


def plan_for(tmp_path: Path, changes: dict[str, Any], catalog: Catalog = CATALOG) -> Plan:
    return build_plan(load_spec(write_spec(tmp_path, changes), env={}), catalog)


def with_memory(memory: str, region: str = "us-east-1") -> dict[str, Any]:
    return {"region": region, "compute": {**AUTO_A100["compute"], "min_gpu_memory": memory}}


def test_min_gpu_memory_in_gib_finds_the_40gb_a100(tmp_path: Path) -> None:
    assert plan_for(tmp_path, with_memory("40GiB")).instance.name == "ml.p4d.24xlarge"
    assert plan_for(tmp_path, with_memory("40GB")).instance.name == "ml.p4d.24xlarge"
    assert plan_for(tmp_path, with_memory("80GiB")).instance.name == "ml.p4de.24xlarge"


def test_cost_in_the_catalogs_region_has_no_region_note(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, with_memory("40GB"))
    assert (plan.cost.price_region, plan.cost.region_note) == ("us-east-1", None)
    cost = plan.summary()["cost_usd"]
    assert (cost["price_region"], cost["region_note"]) == ("us-east-1", None)


def test_cost_in_another_region_says_whose_price_it_is(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, with_memory("40GB", region="eu-west-1"))
    assert plan.region == "eu-west-1"
    assert plan.cost.price_region == "us-east-1"
    assert plan.cost.region_note == "price for us-east-1; eu-west-1 unknown"
    cost = plan.summary()["cost_usd"]
    assert cost["price_region"] == "us-east-1"
    assert cost["region_note"] == "price for us-east-1; eu-west-1 unknown"


def test_cost_uses_a_price_for_the_jobs_region_when_the_catalog_has_one(tmp_path: Path) -> None:
    prices = tmp_path / "eu.yaml"
    prices.write_text("region: eu-west-1\nml.p4d.24xlarge: 20.0\n")
    catalog = load_catalog(prices_path=prices)
    plan = plan_for(tmp_path, with_memory("40GB", region="eu-west-1"), catalog)
    assert plan.instance.name == "ml.p4d.24xlarge"
    assert plan.cost.per_hour == 20.0 * plan.nodes
    assert (plan.cost.price_region, plan.cost.region_note) == ("eu-west-1", None)
    assert plan.cost.price_note == "from eu.yaml"


def test_price_note_and_estimate_reach_the_plan(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.p5en.48xlarge"}})
    note = CATALOG.get("ml.p5en.48xlarge").price_note  # type: ignore[union-attr]
    assert note and plan.cost.price_note == note and plan.cost.price_is_estimate
    cost = plan.summary()["cost_usd"]
    assert (cost["price_note"], cost["price_is_estimate"]) == (note, True)
    plain = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}).summary()["cost_usd"]
    assert (plain["price_note"], plain["price_is_estimate"]) == (None, False)


def test_plan_reports_gpu_memory_in_mib(tmp_path: Path) -> None:
    instance = plan_for(tmp_path, with_memory("40GB")).summary()["instance"]
    assert instance["gpu_memory_mib"] == 40960
    assert instance["gpu_memory_gb"] == 42.95  # decimal GB, as the spec's units count them


def test_an_unknown_price_names_no_region_in_its_place() -> None:
    # No price anywhere: "price for us-east-1; eu-west-1 unknown" would claim a us-east-1 figure.
    b200 = CATALOG.get("ml.p6-b200.48xlarge")
    price = CATALOG.price(b200, "eu-west-1")
    assert price.per_hour is None and price.region_note is None
    assert CATALOG.price(CATALOG.get("ml.g5.xlarge"), "eu-west-1").region_note == "price for us-east-1; eu-west-1 unknown"


def test_a_job_s_cost_is_its_billed_hours_times_the_price_times_its_instances() -> None:
    from smtrain.jobs import JobInfo
    from smtrain.plan.job_cost import job_cost

    price = CATALOG.price(CATALOG.get("ml.g5.12xlarge"), "us-east-1").per_hour
    on_demand = job_cost(JobInfo("j", "sagemaker", "Completed", instance_type="ml.g5.12xlarge", instance_count=2,
                                 region="us-east-1", billable_seconds=5400, training_seconds=5400), CATALOG)
    assert on_demand.usd == round(1.5 * price * 2, 4) and on_demand.spot_saving_usd is None
    spot = job_cost(JobInfo("j", "sagemaker", "Completed", instance_type="ml.g5.12xlarge", instance_count=2,
                            region="us-east-1", billable_seconds=1800, training_seconds=7200, spot=True), CATALOG)
    assert (spot.usd, spot.on_demand_usd) == (round(0.5 * price * 2, 4), round(2 * price * 2, 4))
    assert spot.spot_saving_usd == round(1.5 * price * 2, 4) and spot.spot_saving_percent == 75.0
