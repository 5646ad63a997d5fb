"""compute.instance_groups (a heterogeneous cluster): what it needs and refuses at each field, and what the plan
makes of it: the group the strategy spans, the image's group, the cost of every group, the CPU group outside the
GPU catalog. The request against SDK v2 is tests/render/test_sdk_oracle.py's (instance_groups_* cases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.render.training_request import preview_request
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.cli_runner import smtrain
from tests.support.specfiles import merged, write_spec

CATALOG = load_catalog()
CPU = {"name": "data_group", "instance_type": "ml.c5.18xlarge", "count": 2}
GPU = {"name": "dnn_group", "instance_type": "ml.g5.12xlarge", "count": 3}
OWN = {"code": {"source_dir": "src", "entry_point": "train.py"}}
HOROVOD = {"tensorflow": {"version": "2.12"}, "distribution": {"strategy": "horovod", "instance_groups": ["dnn_group"]}}


def cluster(*more: dict[str, Any], groups: tuple[dict[str, Any], ...] = (CPU, GPU)) -> dict[str, Any]:
    out: dict[str, Any] = merged({"compute": {"instance_groups": list(groups)}}, OWN)
    for changes in more:
        out = merged(out, changes)
    return out


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("import os\nprint(os.environ['SM_CURRENT_INSTANCE_GROUP'])\n")
    return tmp_path


def problems(spec_dir: Path, changes: dict[str, Any]) -> list[str]:
    try:
        build_plan(load_spec(write_spec(spec_dir, changes), env={}), CATALOG)
    except SpecError as error:
        return [f"{'.'.join(map(str, p.path))}: {p.message}" for p in error.problems]
    return []


@pytest.mark.parametrize("changes, expected", [
    ({"code": {"entry_point": None, "source_dir": None}},
     "compute.instance_groups: a heterogeneous cluster runs your own script on every host"),
    ({"code": {"wrap": True}}, "code.wrap: the wrap lays out the replicas of one instance type on every host"),
    ({"distribution": {"strategy": "multi_worker_mirrored"}},
     "distribution.strategy: with compute.instance_groups SageMaker distributes to one group under mpirun only, "
     "not multi_worker_mirrored"),
    ({"distribution": {"strategy": "mirrored"}}, "distribution.strategy: with compute.instance_groups"),
    ({"tensorflow": {"version": "2.12"}, "distribution": {"strategy": "horovod"}},
     "distribution.instance_groups: horovod runs on one group: name it in distribution.instance_groups "
     "(one of data_group, dnn_group)"),
    ({"distribution": {"instance_groups": ["dnn_group"]}},
     "distribution.instance_groups: a group gets a strategy under horovod or smddp only"),
    (merged(HOROVOD, {"distribution": {"instance_groups": ["dnn_group", "data_group"]}}),
     "distribution.instance_groups: horovod runs on one group: name one, not 2"),
    (merged(HOROVOD, {"distribution": {"instance_groups": ["gpus"]}}),
     "distribution.instance_groups: gpus is not a group of compute.instance_groups (data_group, dnn_group)"),
    ({"inputs": {"train": {"uri": "s3://my-bucket/train", "instance_groups": ["cpus"]}}},
     "inputs.train.instance_groups: cpus is not a group of compute.instance_groups (data_group, dnn_group)"),
    ({"compute": {"instance_type": "ml.g5.xlarge"}},
     "compute.instance_type: compute.instance_groups names each group's type and count: remove compute.instance_type"),
    ({"compute": {"nodes": 2}}, "compute.nodes: compute.instance_groups names each group's type and count"),
    ({"compute": {"gpu": "A10G"}}, "compute.gpu: compute.instance_groups names each group's type and count"),
    ({"compute": {"instance_groups": [CPU, dict(GPU, name="data_group")]}},
     "compute.instance_groups.1.name: data_group names two groups: each needs its own name"),
    ({"compute": {"instance_groups": [CPU, dict(GPU, instance_type="ml.g5.13xlarge")]}},
     "compute.instance_groups.1.instance_type: unknown instance type 'ml.g5.13xlarge'"),
    ({"compute": {"instance_groups": [CPU, dict(GPU, instance_type="ml.p9.48xlarge")]}},
     "compute.instance_groups.1.instance_type: unknown instance type 'ml.p9.48xlarge'"),
    ({"tuning": {"objective": "validation:accuracy", "ranges": {"hyperparameters.lr": {"min": 0.1, "max": 1}}}},
     "compute.instance_groups: compute.instance_groups does not apply to a tuning job"),
])
def test_what_a_cluster_refuses_at_its_field(spec_dir: Path, changes: dict[str, Any], expected: str) -> None:
    found = problems(spec_dir, cluster(changes))
    assert any(p.startswith(expected) for p in found), found


def test_group_names_without_a_cluster_are_refused(spec_dir: Path) -> None:
    found = problems(spec_dir, merged(OWN, {"compute": {"instance_type": "ml.g5.xlarge"},
                                            "distribution": {"instance_groups": ["a"]},
                                            "inputs": {"train": {"uri": "s3://my-bucket/t", "instance_groups": ["a"]}}}))
    assert sorted(found) == [
        "distribution.instance_groups: names groups of compute.instance_groups, which the spec has not: add them or "
        "remove this",
        "inputs.train.instance_groups: names groups of compute.instance_groups, which the spec has not: add them or "
        "remove this"]


def test_a_file_system_channel_cannot_be_given_to_one_group(spec_dir: Path) -> None:
    found = problems(spec_dir, cluster({
        "network": {"subnets": ["subnet-0abc1234"], "security_groups": ["sg-0abc1234"]},
        "inputs": {"fs": {"file_system": {"id": "fs-0abc1234", "type": "EFS", "directory": "/d"},
                          "instance_groups": ["data_group"]}}}))
    assert found == ["inputs.fs.instance_groups: a file system is mounted on every host: instance_groups is for "
                     "s3:// channels"]


def test_horovod_spans_the_named_group_and_the_cost_counts_what_the_catalog_prices(spec_dir: Path) -> None:
    plan = build_plan(load_spec(write_spec(spec_dir, cluster(HOROVOD)), env={}), CATALOG)
    assert (plan.instance.name, plan.nodes, plan.strategy, plan.processes_per_host, plan.replicas) == (
        "ml.g5.12xlarge", 3, "horovod", 4, 12)
    assert plan.distribution == {"mpi": {"enabled": True, "processes_per_host": 4, "custom_mpi_options": ""},
                                 "instance_groups": ["dnn_group"]}
    g5 = CATALOG.price(CATALOG.get("ml.g5.12xlarge"), "us-east-1").per_hour
    assert plan.cost.per_hour == pytest.approx(3 * g5)
    assert plan.cost.unpriced == ("ml.c5.18xlarge",)
    groups = plan.summary()["instance_groups"]
    assert [(g["name"], g["instance_type"], g["count"], g["gpus_per_node"]) for g in groups] == [
        ("data_group", "ml.c5.18xlarge", 2, 0), ("dnn_group", "ml.g5.12xlarge", 3, 4)]
    assert groups[0]["per_hour_usd"] is None and groups[1]["per_hour_usd"] == round(3 * g5, 4)
    assert plan.image_uri is not None and "-gpu-" in plan.image_uri


def test_two_priced_groups_cost_together(spec_dir: Path) -> None:
    small = {"name": "small", "instance_type": "ml.g5.xlarge", "count": 2}
    plan = build_plan(load_spec(write_spec(spec_dir, cluster(groups=(small, GPU))), env={}), CATALOG)
    price = {n: CATALOG.price(CATALOG.get(n), "us-east-1").per_hour for n in ("ml.g5.xlarge", "ml.g5.12xlarge")}
    assert plan.cost.per_hour == pytest.approx(2 * price["ml.g5.xlarge"] + 3 * price["ml.g5.12xlarge"])
    assert plan.cost.unpriced == ()


def test_without_a_strategy_every_host_runs_the_script_once_and_the_image_is_the_gpu_group_s(spec_dir: Path) -> None:
    plan = build_plan(load_spec(write_spec(spec_dir, cluster()), env={}), CATALOG)
    assert (plan.strategy, plan.distribution, plan.instance.name) == ("none", None, "ml.g5.12xlarge")
    assert plan.strategy_reason == "auto with compute.instance_groups: every host runs your script once"
    request = preview_request(plan)
    assert request["ResourceConfig"] == {"VolumeSizeInGB": 30, "InstanceGroups": [
        {"InstanceGroupName": "data_group", "InstanceType": "ml.c5.18xlarge", "InstanceCount": 2},
        {"InstanceGroupName": "dnn_group", "InstanceType": "ml.g5.12xlarge", "InstanceCount": 3}]}
    assert "sagemaker_distribution_instance_groups" not in request["HyperParameters"]


def test_a_cluster_needs_a_gpu_group(spec_dir: Path) -> None:
    only = ({"name": "a", "instance_type": "ml.c5.xlarge", "count": 1},
            {"name": "b", "instance_type": "ml.m5.2xlarge", "count": 1})
    assert problems(spec_dir, cluster(groups=only)) == [
        "compute.instance_groups: no group has a GPU type of the catalog: a heterogeneous cluster in smtrain trains on "
        "one group of GPUs (`smtrain instances` lists them)"]


def test_plan_and_the_dry_run_show_the_groups_and_a_local_run_or_check_refuses_them(spec_dir: Path) -> None:
    spec = write_spec(spec_dir, cluster(HOROVOD, {"inputs": {"train": {"uri": "s3://my-bucket/train",
                                                                       "instance_groups": ["data_group"]}}}))
    plan = smtrain("plan", str(spec))
    assert plan.returncode == 0, plan.stderr
    g5 = CATALOG.price(CATALOG.get("ml.g5.12xlarge"), "us-east-1").per_hour
    lines = plan.stdout.splitlines()
    at = lines.index("  groups        compute.instance_groups: your script reads SM_CURRENT_INSTANCE_GROUP")
    assert lines[at + 1:at + 3] == [
        "                data_group: ml.c5.18xlarge x 2, your script once per host, price unknown; its own channels: train",
        f"                dnn_group: ml.g5.12xlarge x 3, horovod over its 3 host(s), ${3 * g5:,.2f}/h"]
    assert "                not counted: ml.c5.18xlarge, outside the GPU catalog (smtrain knows no price for it)" in lines
    valid = smtrain("validate", str(spec))
    assert valid.returncode == 0 and valid.stdout == (
        f"{spec}: valid (horovod on 3 x ml.g5.12xlarge, one of 2 instance groups)\n"), valid.stdout
    dry = smtrain("submit", str(spec), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "  instances     data_group: 2 x ml.c5.18xlarge, dnn_group: 3 x ml.g5.12xlarge, 30 GB volume" in dry.stdout
    refusal = ("compute.instance_groups: a heterogeneous cluster runs on SageMaker only (a local run lays out the "
               "hosts of one instance type, and cannot yet give each group its own); to run your script here, use a "
               "copy of the spec with compute.instance_type and nodes instead")
    home = {"SMTRAIN_HOME": str(spec_dir / "home")}
    local = smtrain("submit", str(spec), "--local", env=home)
    assert local.returncode == 2 and f"error: {refusal}" in local.stderr, local.stderr
    check = smtrain("check", str(spec), env=home)
    assert check.returncode == 2 and check.stderr == (
        "error: cannot check this job: its heterogeneous cluster (compute.instance_groups) gives each group its own "
        "part, which a local run cannot lay out yet; check the training group's script with a copy of the spec with "
        "compute.instance_type and nodes instead\n"), check.stderr
    assert not list((spec_dir / "home").rglob("*.json"))  # no local job was recorded
