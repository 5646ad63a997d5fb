"""smtrain's image registry data (smtrain/plan/data/tf_registries.yaml) against the SageMaker SDKs' own tables:
every TensorFlow training image URI smtrain renders is the one SDK v2's image_uris.retrieve renders, for every
version (short and full), Python version and region of its table, on GPU and CPU types and on ml.p4d; and SDK v3's
table (an env of its own, tests/support/sdk_envs.py) agrees for the versions both know, 2.21 included."""

from __future__ import annotations

import functools
import logging
import os
import warnings
from typing import Any

import pytest

from smtrain.plan.tf_images import image_regions as table_image_regions
from smtrain.plan.tf_images import image_uri as table_image_uri
from smtrain.plan.tf_images import load_table
from smtrain.plan.tf_registries import load_registries
from smtrain.plan.tf_versions import image_regions, image_uri, known_tf_versions, tf_py_versions
from tests.support.sdk_envs import required_sdk_v3_python
from tests.tools.tf_registries import sdk_v3_dump

INSTANCES = {"gpu": "ml.g5.xlarge", "cpu": "ml.c5.xlarge", "p4d": "ml.p4d.24xlarge"}
SMDDP = {"smdistributed": {"dataparallel": {"enabled": True}}}


def _per_py(table: dict[str, Any], version: str) -> dict[str, dict[str, Any]]:
    """py version -> {repository, registries} of `version` (short or full) in an SDK's table."""
    cfg = table["versions"][table["version_aliases"].get(version, version)]
    return {py: cfg for py in cfg["py_versions"]} if "repository" in cfg else dict(cfg)


@pytest.fixture(scope="module")
def sdk_v2():
    """SDK v2's image_uris, with its two file loads memoized: retrieve re-reads its 240 KB JSON and botocore's
    endpoint data on every call (~90 ms, 20 minutes for this grid); the logic that composes the URI is the SDK's."""
    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    from sagemaker import image_uris, utils

    logging.getLogger("sagemaker").setLevel(logging.WARNING)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(utils, "_botocore_resolver", functools.lru_cache(None)(utils._botocore_resolver))
        patch.setattr(image_uris, "config_for_framework", functools.lru_cache(None)(image_uris.config_for_framework))
        yield image_uris


def test_the_versions_and_python_versions_are_sdk_v2s(sdk_v2):
    table = sdk_v2.config_for_framework("tensorflow")["training"]
    assert set(known_tf_versions()) == set(table["versions"]) | set(table["version_aliases"])
    assert {v: set(py) for v, py in tf_py_versions().items()} == {
        v: set(_per_py(table, v)) for v in known_tf_versions()}


def test_every_uri_is_the_one_sdk_v2_renders(sdk_v2):
    table = sdk_v2.config_for_framework("tensorflow")["training"]
    everywhere = set(load_registries().domains)
    checked, wrong = 0, []
    for version in [*table["versions"], *table["version_aliases"]]:
        for py, cfg in _per_py(table, version).items():
            regions = set(cfg["registries"])
            assert set(image_regions(version, py)) == regions, (version, py)
            for region in sorted(regions):
                for kind, instance in INSTANCES.items():
                    want = sdk_v2.retrieve("tensorflow", region, version=version, py_version=py,
                                           instance_type=instance, image_scope="training")
                    got = image_uri(version, py, region, instance)
                    checked += 1
                    if got != want:
                        wrong.append((version, py, region, kind, got, want))
            # Where the SDK has no registry it refuses; smtrain renders nothing.
            assert all(image_uri(version, py, r, INSTANCES["gpu"]) is None for r in everywhere - regions)
    assert not wrong, f"{len(wrong)} of {checked} differ, e.g. {wrong[:3]}"
    assert checked > 10_000


def test_smdistributed_tags_are_the_sdks(sdk_v2):
    # With smdistributed the SDK adds the CUDA/OS suffix on any instance type, as on ml.p4d (TF 2.3 py37).
    table = sdk_v2.config_for_framework("tensorflow")["training"]
    suffixed = []
    for version in [*table["versions"], *table["version_aliases"]]:
        for py in _per_py(table, version):
            if "us-east-1" not in image_regions(version, py):
                continue
            want = sdk_v2.retrieve("tensorflow", "us-east-1", version=version, py_version=py,
                                   instance_type="ml.g5.xlarge", image_scope="training", distribution=SMDDP)
            assert image_uri(version, py, "us-east-1", "ml.g5.xlarge", smdistributed=True) == want, (version, py)
            suffixed += [version] if "-cu110-" in want else []
    assert sorted(suffixed) == ["1.15", "1.15.4", "1.15.5", "2.3", "2.3.1", "2.3.2"]


def test_the_ecr_domain_of_every_region_is_the_one_the_sdk_asks_botocore_for(sdk_v2):
    from sagemaker import utils

    resolver = utils._botocore_resolver()
    assert {r: resolver.construct_endpoint("ecr", r)["hostname"] for r in load_registries().domains} == {
        r: f"ecr.{r}.{d}" for r, d in load_registries().domains.items()}


# --- SDK v3 (sagemaker-core>=2.27), in an env of its own ---------------------------------------------------

@pytest.fixture(scope="module")
def sdk_v3() -> dict[str, Any]:
    return sdk_v3_dump(required_sdk_v3_python(), uris=True)


def test_sdk_v3_renders_the_same_uris_for_the_versions_both_know(sdk_v3):
    known = set(known_tf_versions())
    both = [k for k in sdk_v3["uris"] if k.split("|")[0] in known]
    assert both, "SDK v3's table shares no version with smtrain's data"
    wrong = [(k, image_uri(*k.split("|")[:3], INSTANCES[k.split("|")[3]]), sdk_v3["uris"][k]) for k in both
             if image_uri(*k.split("|")[:3], INSTANCES[k.split("|")[3]]) != sdk_v3["uris"][k]]
    assert not wrong, f"{len(wrong)} of {len(both)} differ (sagemaker-core {sdk_v3['version']}), e.g. {wrong[:3]}"


def test_smtrains_own_rows_agree_with_sdk_v3s_entries(sdk_v3):
    table = sdk_v3["training"]
    v3_versions = set(table["versions"]) | set(table["version_aliases"])
    rows = [r for r in load_table().images if r.short not in known_tf_versions()]
    assert [r.short for r in rows] == ["2.21"]
    for row in rows:
        if row.short not in v3_versions:
            warnings.warn(f"SDK v3 (sagemaker-core {sdk_v3['version']}) has no TensorFlow {row.short}", stacklevel=1)
            continue
        per_py = _per_py(table, row.short)
        assert table["version_aliases"][row.short] == row.version and list(per_py) == [row.python]
        assert per_py[row.python]["repository"] == load_table().repository
        regions = set(per_py[row.python]["registries"])
        assert set(table_image_regions(row)) == regions
        for region in regions:
            # The registry is v3's; the tag is the row's fully qualified one, v3 tags it "<version>-gpu-<py>".
            v3_uri = sdk_v3["uris"][f"{row.version}|{row.python}|{region}|gpu"]
            assert v3_uri.endswith(f":{row.version}-gpu-{row.python}") and row.tag.startswith(
                f"{row.version}-gpu-{row.python}-")
            assert table_image_uri(row, region) == v3_uri.rsplit(":", 1)[0] + ":" + row.tag


def test_versions_sdk_v3_knows_and_smtrain_lacks_are_reported(sdk_v3):
    table = sdk_v3["training"]
    ours = set(known_tf_versions()) | {v for r in load_table().images for v in (r.short, r.version)}
    lacking = sorted((set(table["versions"]) | set(table["version_aliases"])) - ours)
    # Not a failure: SDK v3 may list a version before smtrain's table has its facts. Say it, so it gets added.
    if lacking:
        warnings.warn(f"SDK v3 (sagemaker-core {sdk_v3['version']}) knows TensorFlow {', '.join(lacking)}, which "
                      "smtrain's data lacks: add it to tf_images.yaml and run `make tf-registries`", stacklevel=1)
    assert set(load_registries().newer) <= set(table["versions"])
