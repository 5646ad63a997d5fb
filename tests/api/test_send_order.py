"""What submit and tune check, in the order they check it, before anything reaches AWS: the spec's places on
this machine are refused at their fields before the quota check asks AWS anything, and an AWS failure on the
way (no credentials) is an AwsError. No AWS is reachable here: credentials and config point nowhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import smtrain
from tests.support import ROOT
from tests.support.cli_runner import smtrain as run
from tests.support.specfiles import BASE, merged


@pytest.fixture
def no_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An environment with no AWS credentials anywhere, and no endpoint that answers."""
    env = {"HOME": str(tmp_path), "AWS_CONFIG_FILE": str(tmp_path / "none"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_EC2_METADATA_DISABLED": "true",
           "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "SMTRAIN_HOME": str(tmp_path / "smtrain")}
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.mark.parametrize(("command", "spec", "run_here"), [
    ("submit", "configs/local-demo.yaml", "submit --local"),
    ("tune", "configs/tune-digits.yaml", "tune --local"),
])
def test_a_spec_for_local_runs_is_refused_at_its_fields_before_the_quota_check(
        no_aws: dict[str, str], command: str, spec: str, run_here: str) -> None:
    proc = run(command, spec, env=no_aws)
    assert proc.returncode == 2, proc.stderr
    assert f"run the spec with `{run_here}`" in proc.stderr and "quota" not in proc.stderr.lower(), proc.stderr


def test_the_library_refuses_the_same_places_before_asking_aws(no_aws: dict[str, str]) -> None:
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.submit(ROOT / "configs" / "local-demo.yaml")
    assert caught.value.code == 2 and all("submit --local" in p.message for p in caught.value.problems)


def test_no_credentials_is_an_aws_error_with_exit_code_4(no_aws: dict[str, str]) -> None:
    reports: list[object] = []
    with pytest.raises(smtrain.AwsError) as caught:
        smtrain.submit(merged(BASE, {}), on_quota=reports.append)
    assert caught.value.code == 4 and "credentials" in str(caught.value).lower()
    assert reports == []  # the quota check itself failed: nothing to report, nothing sent
