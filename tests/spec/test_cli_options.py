"""Command-line options read with the spec's own units, run as a user runs smtrain (a process)."""

from __future__ import annotations

import pytest

from tests.support.cli_runner import smtrain


@pytest.mark.parametrize("value", ["40", "40.5", " 24 "])
def test_min_gpu_memory_needs_a_unit(value):
    proc = smtrain("instances", "--min-gpu-memory", value)
    assert proc.returncode == 2, proc.stdout
    assert "Invalid value for --min-gpu-memory" in proc.stderr and "has no unit" in proc.stderr
    assert "GB" in proc.stderr and "GiB" in proc.stderr and proc.stdout == ""


def test_min_gpu_memory_with_a_unit_filters():
    proc = smtrain("instances", "--min-gpu-memory", "40GB", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert '"ml.g4dn.xlarge"' not in proc.stdout and '"ml.p4d.24xlarge"' in proc.stdout


def test_since_further_back_than_any_date_is_a_usage_error(tmp_path):
    proc = smtrain("list", "--local", "--since", "99999999999d", env={"SMTRAIN_HOME": str(tmp_path)})
    assert proc.returncode == 2, proc.stderr
    assert "Invalid value for --since" in proc.stderr and "reaches back further than any date" in proc.stderr
    assert "internal error" not in proc.stderr


@pytest.mark.parametrize("setting", ["compute.instance_type={big}", "hyperparameters.{big}=1", "compute.nodes={big}",
                                     "{big}", "name={big}"])
def test_a_10_kb_set_value_is_quoted_short_in_its_error(tmp_path, setting: str) -> None:
    from tests.support.specfiles import write_spec

    big = "x" * 10_000
    spec = write_spec(tmp_path, {})
    proc = smtrain("validate", str(spec), "--set", setting.format(big=big))
    assert proc.returncode == 2, proc.stderr
    assert big not in proc.stderr and len(proc.stderr) < 2000, proc.stderr[:500]
    assert "..." in proc.stderr
