"""The commands of issue 2 end to end through a real process: output formats and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.support.cli_runner import ROOT, smtrain
from tests.support.specfiles import write_spec

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


def test_help_lists_commands_and_exit_codes():
    proc = smtrain("--help")
    assert proc.returncode == 0
    for word in ("validate", "plan", "submit", "instances", "schema", "124"):
        assert word in proc.stdout


def test_validate_ok_and_invalid(tmp_path):
    good = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}})
    proc = smtrain("validate", str(good))
    assert proc.returncode == 0 and "valid" in proc.stdout
    bad = write_spec(tmp_path, {"compute": {"nodse": 2}}, name="bad.yaml")
    proc = smtrain("validate", str(bad))
    assert proc.returncode == 2
    assert f"{bad}:" in proc.stderr and "did you mean 'nodes'" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_validate_json(tmp_path):
    bad = write_spec(tmp_path, {"compute": {"nodes": 0}, "distribution": {"strategy": "magic"}})
    proc = smtrain("validate", str(bad), "--output", "json")
    assert proc.returncode == 2
    data = json.loads(proc.stdout)
    assert data["valid"] is False
    fields = {p["field"] for p in data["problems"]}
    assert fields == {"compute.nodes", "distribution.strategy"}
    assert all(p["line"] and p["column"] and p["file"] == str(bad) for p in data["problems"])


def test_validate_runs_the_plan_rules(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2},
                                 "distribution": {"strategy": "mirrored"}})
    proc = smtrain("validate", str(spec))
    assert proc.returncode == 2 and "distribution.strategy" in proc.stderr


def test_set_override_on_the_command_line(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}})
    proc = smtrain("plan", str(spec), "--set", "compute.nodes=3", "--output", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["nodes"] == 3
    proc = smtrain("plan", str(spec), "--set", "compute.nodes=many")
    assert proc.returncode == 2 and "--set compute.nodes=many" in proc.stderr


def test_plan_text_shows_the_decisions():
    proc = smtrain("plan", "configs/mwms.yaml")
    assert proc.returncode == 0, proc.stderr
    for needle in ("ml.p4d.24xlarge", "multi_worker_mirrored", "1024 global", "0.016", "TF_CONFIG=", "$"):
        assert needle in proc.stdout


def test_plan_json_keys_are_stable():
    data = json.loads(smtrain("plan", "configs/horovod.yaml", "--output", "json").stdout)
    assert set(data) >= {"name", "region", "instance", "nodes", "gpus_per_node", "strategy", "replicas", "batch",
                         "learning_rate", "tensorflow", "launch", "cost_usd", "warnings"}
    assert data["launch"][0]["command"][0] == "mpirun"
    assert data["cost_usd"]["per_hour"] > 0


def test_missing_region_is_an_error(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}})
    text = spec.read_text().replace("region: us-east-1\n", "")
    spec.write_text(text)
    empty_home = tmp_path / "home"
    empty_home.mkdir()
    proc = smtrain("validate", str(spec), env={"HOME": str(empty_home)})
    assert proc.returncode == 2 and "region" in proc.stderr
    proc = smtrain("validate", str(spec), env={"HOME": str(empty_home), "AWS_REGION": "eu-west-1"})
    assert proc.returncode == 0, proc.stderr


def test_instances_table_and_json():
    proc = smtrain("instances", "--gpu", "A100", "--gpus", "8")
    assert proc.returncode == 0 and "ml.p4d.24xlarge" in proc.stdout and "ml.g5" not in proc.stdout
    data = json.loads(smtrain("instances", "--min-gpu-memory", "80GB", "--output", "json").stdout)
    assert data["instances"] and all(i["gpu_memory_gb"] >= 80 for i in data["instances"])
    prices = [i["price_per_hour"] for i in data["instances"]]
    known = [p for p in prices if p is not None]  # an unknown price (null) sorts last
    assert prices == sorted(known) + [None] * (len(prices) - len(known))
    assert smtrain("instances", "--min-gpu-memory", "lots").returncode == 2


def test_prices_override_changes_cost(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("ml.p4d.24xlarge: 10.0\n")
    data = json.loads(smtrain("--prices", str(prices), "plan", "configs/mwms.yaml", "-o", "json").stdout)
    assert data["cost_usd"]["per_hour"] == 20.0


def test_schema_accepts_every_example_config():
    proc = smtrain("schema")
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    for config in CONFIGS:
        jsonschema.validate(yaml.safe_load(config.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "x", "bogus": 1}, schema)


def test_unknown_command_is_usage_error():
    assert smtrain("frobnicate").returncode == 2


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_config_validates_and_plans(config: Path):
    assert smtrain("validate", str(config)).returncode == 0
    assert smtrain("plan", str(config), "-o", "json").returncode == 0
