"""The catalog against the installed botocore's list of training instance types: every GPU type is either
in the catalog or left out with a reason, so a botocore release that adds one fails here instead of being
missed; and the catalog names nothing the service would refuse."""

from __future__ import annotations

import pytest

from smtrain.plan import gpu_facts
from smtrain.plan.catalog import Catalog, CatalogError, resolve_instance
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.instance_choice import select_instance
from tests.plan.test_catalog import _ec2_instance_types  # moto's copy of EC2 DescribeInstanceTypes

# The GPU families: ml.p* and ml.g* (ml.c*, ml.m*, ml.r*, ml.t*, ml.trn* and ml.inf* carry no NVIDIA GPU).
GPU_PREFIXES = ("ml.p", "ml.g")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _training_enum() -> list[str]:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model("CreateTrainingJob").input_shape.members["ResourceConfig"].members["InstanceType"]
    return list(shape.enum)


def test_every_gpu_training_type_is_in_the_catalog_or_left_out_with_a_reason(catalog: Catalog) -> None:
    gpu_types = [n for n in _training_enum() if n.startswith(GPU_PREFIXES)]
    assert len(gpu_types) >= 58  # botocore 1.44: 58 ml.p*/ml.g* training types
    unplaced = [n for n in gpu_types if catalog.get(n) is None and n not in catalog.excluded]
    assert unplaced == [], f"add these to smtrain/plan/data/instances.yaml (instances or excluded): {unplaced}"
    both = [n for n in gpu_types if catalog.get(n) is not None and n in catalog.excluded]
    assert both == []
    # The 18 the catalog once lacked are all placed: 14 listed, 4 left out.
    for name in ("ml.p6-b200.48xlarge", "ml.p6-b300.48xlarge", *(f"ml.g7.{s}xlarge" for s in (2, 4, 8, 12, 24, 48)),
                 *(f"ml.g7e.{s}xlarge" for s in (2, 4, 8, 12, 24, 48))):
        assert catalog.get(name) is not None, name
    assert {"ml.p2.xlarge", "ml.p2.8xlarge", "ml.p2.16xlarge", "ml.p6e-gb200.36xlarge"} <= set(catalog.excluded)


def test_every_entry_and_exclusion_is_a_training_type(catalog: Catalog) -> None:
    training = set(_training_enum())
    assert [n for n in catalog.names() if n not in training] == []
    assert [n for n in catalog.excluded if n not in training] == []


def test_exclusions_say_why(catalog: Catalog) -> None:
    for name, reason in catalog.excluded.items():
        assert len(reason) > 40, name
    assert "K80" in catalog.excluded["ml.p2.xlarge"] and "3.7" in catalog.excluded["ml.p2.xlarge"]
    gb200 = catalog.excluded["ml.p6e-gb200.36xlarge"]
    assert "Arm" in gb200 and "x86_64" in gb200
    with pytest.raises(CatalogError, match=r"ml.p2.8xlarge is left out of the GPU catalog: NVIDIA K80"):
        resolve_instance(catalog, "ml.p2.8xlarge")


def test_new_entries_are_ec2s_facts(catalog: Catalog) -> None:
    ec2 = _ec2_instance_types()
    new = [i for i in catalog if i.family in ("p6-b200", "p6-b300", "g7", "g7e")]
    assert len(new) == 14
    for inst in new:
        facts = ec2[inst.name.removeprefix("ml.")]
        (gpu,) = facts["GpuInfo"]["Gpus"]
        assert (inst.gpu, inst.gpus, inst.gpu_memory_mib) == (gpu["Name"], gpu["Count"], gpu["MemoryInfo"]["SizeInMiB"])
        assert inst.vcpus == facts["VCpuInfo"]["DefaultVCpus"], inst.name
        assert inst.memory == facts["MemoryInfo"]["SizeInMiB"] * 2**20, inst.name
        assert inst.efa is bool(facts["NetworkInfo"].get("EfaSupported")), inst.name
        # No public SageMaker price: unknown, said so, never a guess.
        assert inst.price_per_hour is None and inst.note and "price unknown" in inst.note
    b200 = catalog.get("ml.p6-b200.48xlarge")
    assert b200 is not None and (b200.gpu, b200.gpus, b200.vcpus, b200.memory, b200.efa) == (
        "B200", 8, 192, 2048 * 2**30, True)
    assert catalog.get("ml.g7e.2xlarge").efa is False  # type: ignore[union-attr]
    assert catalog.get("ml.g7.12xlarge").gpus == 2  # type: ignore[union-attr]


def test_every_catalog_gpu_has_a_compute_capability(catalog: Catalog) -> None:
    for model in catalog.gpu_models():
        assert gpu_facts.compute_capability(model) is not None, model
    assert gpu_facts.compute_capability("nvidia a100") == (8, 0)
    # What the TensorFlow images drive: everything up to Hopper, nothing of Blackwell.
    driven = {m: gpu_facts.tensorflow_drives(m) for m in catalog.gpu_models()}
    assert {m for m, ok in driven.items() if not ok} == {"B200", "B300", "RTX PRO 4500", "RTX PRO Server 6000"}
    assert gpu_facts.tensorflow_drives("MI300X") is None  # unknown, not refused
    # Mixed precision: float16 pays from 7.0 (V100 on), bfloat16 from 8.0; the Blackwell parts have both.
    assert (gpu_facts.fast_float16("V100"), gpu_facts.fast_bfloat16("V100")) == (True, False)
    assert (gpu_facts.fast_float16("K80"), gpu_facts.fast_bfloat16("B200")) == (False, True)


def test_distribution_rules_know_the_new_types(catalog: Catalog) -> None:
    from smtrain.plan import distribution

    p6 = catalog.get("ml.p6-b200.48xlarge")
    g7 = catalog.get("ml.g7.2xlarge")
    assert p6 is not None and g7 is not None
    # smddp stays on the SDK's list, which has no P6.
    smddp = distribution.check("smddp", "2.11", p6, 2, "auto")
    assert any("smddp does not run on ml.p6-b200.48xlarge" in msg for _, msg in smddp.errors)
    allowed = distribution.allowed_instances("smddp")
    assert allowed is not None and not any(n.startswith(("ml.p5", "ml.p6", "ml.g7")) for n in allowed[0])
    # P6 has EFA, so several nodes raise no TCP warning; a g7.2xlarge has none and does.
    assert not [m for _, m in distribution.check("multi_worker_mirrored", "2.21", p6, 2, "auto").warnings
                if "EFA" in m]
    assert any("has no EFA" in m for _, m in distribution.check("multi_worker_mirrored", "2.21", g7, 2, "auto").warnings)


def test_a_user_may_list_an_excluded_type(tmp_path, catalog: Catalog) -> None:  # type: ignore[no-untyped-def]
    mine = tmp_path / "mine.yaml"
    mine.write_text("instances:\n  ml.p2.xlarge: {gpu: K80, gpus: 1, gpu_memory_mib: 12288, vcpus: 4, memory: 61GiB, "
                    "efa: false, price: 1.125}\n", encoding="utf-8")
    merged = load_catalog(catalog_path=mine)
    p2 = merged.get("ml.p2.xlarge")
    assert p2 is not None and "ml.p2.xlarge" not in merged.excluded and "ml.p2.8xlarge" in merged.excluded
    # Listed, but the TensorFlow images carry no code for a 3.7 GPU: never picked, and an explicit choice warns.
    assert p2.tensorflow_drives is False and p2.tensorflow_note and "from 6.0 up" in p2.tensorflow_note
    with pytest.raises(CatalogError, match="cannot drive its GPU: ml.p2.xlarge"):
        select_instance(merged, "K80", 1, None)
