"""`smtrain instances` and `smtrain plan` as a user runs them: filters that match nothing, GPU memory
units, price notes and the region a price is for."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli_runner import smtrain

MWMS = "configs/mwms.yaml"
A100x8 = ("--set", "compute.gpu=A100", "--set", "compute.gpus_per_node=8")


def test_instances_filter_matching_nothing_is_a_usage_error() -> None:
    proc = smtrain("instances", "--gpu", "MI300X")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "no instance type matches --gpu MI300X" in proc.stderr
    assert ("GPU models available: V100, A100, H100, H200, T4, A10G, L4, L40S, B200, B300, RTX PRO 4500, "
            "RTX PRO Server 6000") in proc.stderr
    assert "Traceback" not in proc.stderr

    as_json = smtrain("instances", "--gpu", "MI300X", "-o", "json")
    document = json.loads(as_json.stdout)  # a failure is a document too, for a CI step's parser
    assert as_json.returncode == 2 and (document["ok"], document["exit_code"]) == (False, 2)
    assert document["error"].startswith("no instance type matches --gpu MI300X")

    proc = smtrain("instances", "--gpu", "A100", "--gpus", "16")
    assert proc.returncode == 2
    assert "--gpu A100 --gpus 16" in proc.stderr and "the most is 8" in proc.stderr

    proc = smtrain("instances", "--min-gpu-memory", "300GB")
    assert proc.returncode == 2
    assert "--min-gpu-memory 300GB" in proc.stderr and "the most is 268.6GiB (ml.p6-b300" in proc.stderr


def test_instances_min_gpu_memory_in_gib() -> None:
    data = json.loads(smtrain("instances", "--gpu", "A100", "--min-gpu-memory", "40GiB", "-o", "json").stdout)
    assert [i["type"] for i in data["instances"]] == ["ml.p4d.24xlarge", "ml.p4de.24xlarge"]
    assert data["instances"][0]["gpu_memory_mib"] == 40960


def test_instances_show_price_notes_and_region() -> None:
    data = json.loads(smtrain("instances", "--gpu", "H200", "-o", "json").stdout)
    assert data["price_region"] == "us-east-1"
    assert data["instances"]
    for entry in data["instances"]:
        assert entry["price_is_estimate"] is True and "unverified estimate" in entry["price_note"]
        assert entry["price_region"] == "us-east-1"
    plain = json.loads(smtrain("instances", "--gpu", "T4", "-o", "json").stdout)["instances"]
    assert plain and all(e["price_note"] is None and e["price_is_estimate"] is False for e in plain)

    text = smtrain("instances", "--gpu", "H200").stdout
    assert "us-east-1" in text
    assert "unverified estimate: no public on-demand figure found" in text
    assert "unverified estimate: EC2 on-demand 63.296" in text


def test_plan_40gib_picks_the_40gb_a100_and_80gib_finds_one() -> None:
    for memory, expected in (("40GiB", "ml.p4d.24xlarge"), ("80GiB", "ml.p4de.24xlarge")):
        proc = smtrain("plan", MWMS, *A100x8, "--set", f"compute.min_gpu_memory={memory}", "-o", "json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["instance"]["type"] == expected


def test_plan_in_another_region_says_the_price_is_us_east_1() -> None:
    text = smtrain("plan", MWMS, "--set", "region=eu-west-1")
    assert text.returncode == 0, text.stderr
    assert "price for us-east-1; eu-west-1 unknown" in text.stdout
    cost = json.loads(smtrain("plan", MWMS, "--set", "region=eu-west-1", "-o", "json").stdout)["cost_usd"]
    assert cost["price_region"] == "us-east-1"
    assert cost["region_note"] == "price for us-east-1; eu-west-1 unknown"
    home = json.loads(smtrain("plan", MWMS, "-o", "json").stdout)["cost_usd"]
    assert (home["price_region"], home["region_note"]) == ("us-east-1", None)
    assert "unknown" not in smtrain("plan", MWMS).stdout


def test_plan_shows_an_estimated_price_as_an_estimate() -> None:
    args = ("plan", MWMS, "--set", "compute.instance_type=ml.p5en.48xlarge")
    text = smtrain(*args).stdout
    assert "/h on demand (estimate)" in text
    assert "unverified estimate: EC2 on-demand 63.296 x 1.15" in text
    cost = json.loads(smtrain(*args, "-o", "json").stdout)["cost_usd"]
    assert cost["price_is_estimate"] is True and "unverified estimate" in cost["price_note"]


def test_catalog_file_with_the_old_gpu_memory_field_is_converted_aloud(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "instances:\n  ml.p6-b200.48xlarge:\n"
        "    {gpu: B200, gpus: 8, gpu_memory: 180GB, vcpus: 192, memory: 2048GiB, efa: true, price: 120.0}\n"
    )
    proc = smtrain("--catalog", str(mine), "instances", "--gpu", "B200", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["instances"][0]["gpu_memory_mib"] == 184320
    assert "gpu_memory: 180GB -> gpu_memory_mib: 184320" in proc.stderr


def test_a_price_or_gpu_memory_past_a_float_is_exit_2_at_its_line_in_instances_and_plan(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text('{"source": "mine",\n "ml.p4d.24xlarge": 1' + "0" * 400 + "}\n")
    catalog = tmp_path / "mine.yaml"
    catalog.write_text("instances:\n  ml.p4d.24xlarge:\n    {gpu: A100, gpus: 8, vcpus: 96, memory: 1152GiB, "
                       "efa: true, price: 25,\n     gpu_memory_mib: 1" + "0" * 5000 + "}\n")
    for option, path, where in (("--prices", prices, f"{prices}:2: "), ("--catalog", catalog, f"{catalog}:4: ")):
        for command in (("instances",), ("plan", MWMS, *A100x8)):
            proc = smtrain(option, str(path), *command)
            assert proc.returncode == 2, (command, proc.stderr)
            assert proc.stderr.startswith(f"error: {where}") and "Traceback" not in proc.stderr, proc.stderr
            assert len(proc.stderr) < 400 and proc.stdout == ""
