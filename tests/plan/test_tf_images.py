"""smtrain's table of TensorFlow training images: its facts and sources, the URIs it renders for versions the
SageMaker SDK does not know, the default version, the end-of-patch warning, and how `plan` shows them.
Offline and without the SDK: the plan stage reads smtrain's own data (tf_images.yaml, tf_registries.yaml)."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from smtrain.cli.render import plan_text
from smtrain.plan.build import Plan, build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.tf_image_choice import default_version, patch_warning
from smtrain.plan.tf_images import image_regions, image_uri, load_table
from smtrain.plan.tf_registries import load_registries
from smtrain.plan.tf_versions import known_tf_versions
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.plan.test_program import line_of
from tests.spec.inprocess import run
from tests.support.specfiles import BASE_TEXT, merged

CATALOG = load_catalog()
TODAY = date(2026, 11, 23)  # the day these facts were checked: 2.19's patches ended, 2.21's run to 2027-07-10
G5 = {"compute": {"instance_type": "ml.g5.xlarge"}}


def spec_file(tmp_path: Path, changes: dict[str, Any], drop_tensorflow: bool = False) -> Path:
    data = merged(yaml.safe_load(BASE_TEXT), changes)
    if drop_tensorflow:
        data.pop("tensorflow")
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def plan_for(tmp_path: Path, changes: dict[str, Any], today: date = TODAY, **kw: bool) -> Plan:
    return build_plan(load_spec(spec_file(tmp_path, changes, **kw), env={}), CATALOG, today=today)


def refused(tmp_path: Path, changes: dict[str, Any]) -> list[str]:
    try:
        plan_for(tmp_path, changes)
    except SpecError as exc:
        return [p.render() for p in exc.problems]
    raise AssertionError(f"the plan for {changes} was accepted")


# --- the table ---------------------------------------------------------------------------------------------

def test_every_row_has_its_facts_and_says_where_they_come_from():
    table = load_table()
    assert table.repository == "tensorflow-training"
    for row in table.images:
        assert row.version.startswith(row.short + ".") and re.fullmatch(r"py3\d+", row.python)
        # The tag carries the row's own facts: version, GPU, Python, CUDA, OS, SageMaker flavour.
        cuda = "cu" + "".join(row.cuda.split(".")[:2]) if row.cuda else "cu"
        assert row.tag.startswith(f"{row.version}-gpu-{row.python}-{cuda}") and row.tag.endswith(f"-{row.os}-sagemaker")
        assert re.search(r"PR #\d+|\.yml|\.md", row.source), row
        # A fact left unknown is said to be unknown, in the source.
        if row.ga is None or row.end_of_patch is None:
            assert "unknown" in row.source, row
        else:
            assert row.ga < row.end_of_patch
    assert [r.short for r in table.images] == sorted((r.short for r in table.images),
                                                    key=lambda v: tuple(map(int, v.split("."))), reverse=True)


def test_the_table_covers_every_version_the_sdk_knows_from_2_13_and_2_21():
    sdk = {v for v in known_tf_versions() if v.count(".") == 1 and tuple(map(int, v.split("."))) >= (2, 13)}
    table = load_table()
    assert sdk | {"2.21"} <= set(table.versions())
    # Where the SDK knows the version, the two tables agree on its full version.
    sdk_full = {v for v in known_tf_versions() if v.count(".") == 2}
    assert all(r.version in sdk_full for r in table.images if r.short in sdk)


def test_the_facts_checked_in_the_dlc_sources():
    table = load_table()
    new, old = table.find("2.21"), table.find("2.19.0")
    assert (new.version, new.python, new.cuda, new.os, new.ga, new.end_of_patch) == (
        "2.21.0", "py312", "12.9.1", "amzn2023", date(2026, 7, 10), date(2027, 7, 10))
    assert new.tag == "2.21.0-gpu-py312-cu129-amzn2023-sagemaker"
    assert "#6107" in new.source and "#6378" in new.source
    assert old.end_of_patch == date(2026, 3, 11) and old.python == "py312"
    assert table.find("2.20") is None and "2.20" in table.no_image


# --- rendering a URI -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1", "cn-north-1", "cn-northwest-1", "us-isob-east-1"])
def test_2_21_renders_from_the_registry_data_for_the_region(region):
    row = load_table().find("2.21")
    data = load_registries()
    account = data.accounts["tensorflow-training"][region]  # smtrain's data, copied from the SDKs' tables
    uri = image_uri(row, region)
    host, _, path = uri.partition("/")
    assert path == "tensorflow-training:2.21.0-gpu-py312-cu129-amzn2023-sagemaker"
    assert host == f"{account}.dkr.ecr.{region}.{data.domains[region]}"
    assert host.endswith(".amazonaws.com.cn") == region.startswith("cn-")


def test_each_regions_ecr_domain_is_data():
    domains = load_registries().domains
    assert domains["us-east-1"] == "amazonaws.com" and domains["cn-north-1"] == "amazonaws.com.cn"
    assert domains["us-gov-west-1"] == "amazonaws.com" and domains["us-iso-east-1"] == "c2s.ic.gov"
    assert domains["us-isob-east-1"] == "sc2s.sgov.gov" and "xx-nowhere-1" not in domains


def test_every_row_has_a_registry_entry_for_its_python():
    # 2.13 to 2.19 from SDK v2's table, 2.21 from SDK v3's (tf_registries.yaml `newer`).
    data = load_registries()
    for row in load_table().images:
        entry = data.entry(row.version, row.python)
        assert entry is not None and entry.repository == load_table().repository, row
        assert image_regions(row) == sorted(entry.regions) and "us-east-1" in entry.regions
    assert set(data.newer) == {"2.21.0"}


def test_no_registry_no_uri():
    assert image_uri(load_table().find("2.21"), "eu-west-9") is None


# --- the default and the end-of-patch warning ----------------------------------------------------------------

def test_default_is_the_newest_patched_version_on_the_day():
    assert default_version(TODAY) == "2.21"
    assert default_version(date(2026, 1, 1)) == "2.19"  # before 2.21's GA, while 2.19 was patched
    assert default_version(date(2030, 1, 1)) == "2.21"  # nothing patched: the newest, with a warning


def test_warning_past_end_of_patch_names_the_date_and_the_version_to_move_to():
    warning = patch_warning("2.19", TODAY)
    assert "2026-03-11" in warning and "move to 2.21" in warning and "2027-07-10" in warning
    assert patch_warning("2.19", date(2026, 3, 11)) is None  # patched on its last day
    assert patch_warning("2.21", TODAY) is None
    assert "update smtrain" in patch_warning("2.21", date(2027, 7, 11))
    # Older than every version with a date (2.13, 2.12 the SDK knows): not among the supported ones.
    for version in ("2.13", "2.12"):
        assert "no longer gets AWS's security patches" in patch_warning(version, TODAY)


def test_a_spec_without_a_version_gets_the_default(tmp_path):
    path = spec_file(tmp_path, G5, drop_tensorflow=True)
    plan = build_plan(load_spec(path, env={}), CATALOG, today=TODAY)
    assert (plan.framework_version, plan.py_version) == ("2.21", "py312")
    assert plan.image_uri == image_uri(load_table().find("2.21"), "us-east-1")
    assert plan.summary()["tensorflow"] == {
        "version": "2.21", "python": "py312", "image_uri": plan.image_uri, "image_source": "smtrain table",
        "version_defaulted": True, "cuda": "12.9.1", "end_of_patch": "2027-07-10", "patched": True,
        "keras": {"major": 3, "through": "tf.keras", "requirement": None}}
    assert plan.warnings == []
    # An empty tensorflow: section is the same as none.
    assert plan_for(tmp_path, {**G5, "tensorflow": {}}).framework_version == "2.21"


def test_the_plan_warns_for_2_19_at_its_line_and_not_for_2_21(tmp_path):
    plan = plan_for(tmp_path, {**G5, "tensorflow": {"version": "2.19"}})
    path = tmp_path / "job.yaml"
    (warning,) = [w.render() for w in plan.warnings]
    assert warning.startswith(f"{path}:{line_of(path, 'version:')}:") and "tensorflow.version" in warning
    assert "2026-03-11" in warning and "2.21" in warning
    # The SDK's table's image, rendered by smtrain the SDK's way: the version as written, gpu, the Python.
    assert plan.image_uri.endswith(".dkr.ecr.us-east-1.amazonaws.com/tensorflow-training:2.19-gpu-py312")
    assert plan.summary()["tensorflow"]["image_source"] == "sdk"
    assert plan.summary()["tensorflow"]["patched"] is False
    assert plan_for(tmp_path, {**G5, "tensorflow": {"version": "2.21"}}).warnings == []
    # An image of one's own: no facts about it, so no warning.
    own = plan_for(tmp_path, {**G5, "tensorflow": {"version": "2.19", "image_uri": "registry.example/tf:1"}})
    assert own.warnings == [] and own.summary()["tensorflow"]["image_source"] == "spec"


# --- refusals --------------------------------------------------------------------------------------------------

def test_an_unknown_version_is_an_error_at_its_line_naming_the_versions_available(tmp_path):
    out = refused(tmp_path, {**G5, "tensorflow": {"version": "2.20"}})
    path = tmp_path / "job.yaml"
    assert len(out) == 1 and out[0].startswith(f"{path}:{line_of(path, 'version:')}:12: tensorflow.version: ")
    assert "no TensorFlow 2.20 training image" in out[0] and "#6107" in out[0]
    assert out[0].endswith("Available: 2.21 (the default), 2.19, 2.18, 2.16, 2.14, 2.13; older ones from the "
                           "SageMaker SDK's table, 1.4 to 2.12; give tensorflow.image_uri to use another image")
    other = refused(tmp_path, {**G5, "tensorflow": {"version": "2.99"}})
    assert "smtrain's table" in other[0] and "2.21 (the default)" in other[0]


def test_2_21_with_another_python_is_an_error(tmp_path):
    out = refused(tmp_path, {**G5, "tensorflow": {"version": "2.21", "python": "py310"}})
    assert len(out) == 1 and "tensorflow.python" in out[0] and "py312, not py310" in out[0]


def test_a_region_without_a_registry_is_refused_at_the_region(tmp_path):
    out = refused(tmp_path, {**G5, "region": "eu-west-9"})
    assert len(out) == 1 and ":3:9: region: smtrain knows no registry" in out[0] and "us-east-1" in out[0]


# --- what plan and validate show ---------------------------------------------------------------------------------

def test_plan_text_shows_version_python_cuda_and_where_the_image_comes_from(tmp_path):
    text = plan_text(plan_for(tmp_path, G5, drop_tensorflow=True))
    assert "  tensorflow    2.21 py312, CUDA 12.9.1 (the default: the newest patched image, until 2027-07-10)" in text
    assert "                image: smtrain's table: " in text and "2.21.0-gpu-py312-cu129-amzn2023-sagemaker" in text
    old = plan_text(plan_for(tmp_path, {**G5, "tensorflow": {"version": "2.19"}}))
    assert "  tensorflow    2.19 py312, CUDA 12.5.1 (patches ended 2026-03-11)" in old
    assert "image: the SageMaker SDK's table (smtrain's copy): " in old and "tensorflow-training:2.19-gpu-py312" in old


def test_validate_and_plan_commands_show_the_warning(tmp_path):
    path = spec_file(tmp_path, {**G5, "tensorflow": {"version": "2.19"}})
    validate = run("validate", str(path))
    assert validate.code == 0 and "warning: " in validate.stderr and "2026-03-11" in validate.stderr
    plan = run("plan", str(path), "-o", "json")
    assert plan.code == 0
    assert any("2026-03-11" in w for w in json.loads(plan.stdout)["warnings"])


def test_readmes_table_is_the_data_files():
    from tests.support import docs

    text = docs.section("TensorFlow versions and images")
    rows = re.findall(r"^\| (2\.\d+) \| (py\d+) \| ([\d.]+) \| (\S+) \| `([^`]+)` \| (\S+) \| (\S+) \|$", text, re.M)
    assert rows == [(r.short, r.python, r.cuda, r.os, r.tag, str(r.ga or "unknown"), str(r.end_of_patch or "unknown"))
                    for r in load_table().images]
