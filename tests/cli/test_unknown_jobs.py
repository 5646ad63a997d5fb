"""A job that does not exist, asked for by someone with local jobs only (no AWS region anywhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_runner import smtrain


@pytest.fixture
def no_aws(tmp_path: Path) -> dict[str, str]:
    # No region from the environment nor from an AWS config file.
    return {"SMTRAIN_HOME": str(tmp_path / "home"), "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
            "HOME": str(tmp_path)}


@pytest.mark.parametrize("command", [["status"], ["logs"], ["wait"], ["stop"], ["tensorboard"], ["metrics"]])
def test_an_unknown_job_is_named_as_unknown_with_exit_4(no_aws: dict[str, str], command: list[str]) -> None:
    proc = smtrain(*command, "no-such-job", env=no_aws)
    assert proc.returncode == 4, proc.stderr
    assert "no local job named no-such-job" in proc.stderr and "Traceback" not in proc.stderr


def test_list_without_a_region_lists_local_jobs(no_aws: dict[str, str]) -> None:
    proc = smtrain("list", "-o", "json", env=no_aws)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"jobs": []} and "listing local jobs" in proc.stderr


def test_list_tuning_without_a_region_asks_for_one(no_aws: dict[str, str]) -> None:
    # Tuning jobs exist only on SageMaker: no quiet switch to local jobs, and no complaint about --local.
    proc = smtrain("list", "--tuning", env=no_aws)
    assert proc.returncode == 2, proc.stderr
    assert "no AWS region" in proc.stderr and "--local" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", [["status"], ["logs"], ["wait"], ["stop"], ["tensorboard"], ["metrics"]])
@pytest.mark.parametrize("name", ["../x", "a/b", "job_1", "-x-", "x" * 64])
def test_a_name_no_job_can_have_is_refused_before_anything_is_asked(tmp_path: Path, command: list[str],
                                                                     name: str) -> None:
    # A region and an endpoint nobody serves: a name that reached AWS would end in exit 4, not 2.
    env = {"SMTRAIN_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}
    (tmp_path / "x").mkdir()  # what ../x would reach from the jobs' home
    proc = smtrain(*command, "--", name, env=env) if name.startswith("-") else smtrain(*command, name, env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"error: invalid job name {name!r} (JOB): 1-63 letters, digits and hyphens, "
                                   "starting and ending with a letter or digit")
