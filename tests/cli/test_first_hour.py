"""What a new user meets in the first hour, through a real process (issue: every README promise true)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli_runner import smtrain
from tests.support.specfiles import write_spec


def test_set_before_the_command_works_and_the_commands_own_wins(tmp_path: Path) -> None:
    spec = str(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2}}))
    early = smtrain("--set", "compute.nodes=4", "plan", spec, "-o", "json")
    assert early.returncode == 0, early.stderr
    assert json.loads(early.stdout)["nodes"] == 4
    both = smtrain("--set", "compute.nodes=4", "plan", spec, "--set", "compute.nodes=3", "-o", "json")
    assert json.loads(both.stdout)["nodes"] == 3


def test_an_unknown_training_field_points_to_hyperparameters(tmp_path: Path) -> None:
    proc = smtrain("validate", str(write_spec(tmp_path)), "--set", "training.momentum=0.5")
    assert proc.returncode == 2
    assert "training.momentum: unknown field" in proc.stderr and "hyperparameters:" in proc.stderr


def test_completion_scripts_and_a_real_completion() -> None:
    for shell in ("bash", "zsh", "fish"):
        proc = smtrain("completion", shell)
        assert proc.returncode == 0 and "_SMTRAIN_COMPLETE" in proc.stdout, (shell, proc.stderr)
    # What the bash script asks smtrain for when a user presses TAB after `smtrain val`.
    asked = smtrain(env={"_SMTRAIN_COMPLETE": "bash_complete", "COMP_WORDS": "smtrain val", "COMP_CWORD": "1"})
    assert "plain,validate" in asked.stdout.splitlines()  # bash_complete answers `type,value` lines


def test_plan_text_counts_one_replica_in_the_singular(tmp_path: Path) -> None:
    proc = smtrain("plan", str(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}})))
    assert proc.returncode == 0, proc.stderr
    assert "over 1 replica)" in proc.stdout and "1 replicas" not in proc.stdout


def test_every_command_takes_text_json_and_yaml() -> None:
    from smtrain.cli.commands import main

    for name, command in main.commands.items():
        output = next((p for p in command.params if p.name == "output"), None)
        if name == "completion":
            continue
        assert output is not None and "yaml" in output.type.choices, name  # type: ignore[union-attr]
        if name != "schema":  # the schema is a JSON document by nature
            assert output.default == "text", name


def test_yaml_output_is_the_json_output(tmp_path: Path) -> None:
    import yaml

    spec = str(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}))
    env = {"SMTRAIN_HOME": str(tmp_path / "home")}
    for args in (["validate", spec], ["plan", spec], ["instances", "--gpu", "A10G"], ["schema"], ["list", "--local"],
                 ["submit", spec, "--dry-run", "--job-name", "same-1"]):
        as_json = smtrain(*args, "-o", "json", env=env)
        as_yaml = smtrain(*args, "-o", "yaml", env=env)
        assert as_json.returncode == as_yaml.returncode == 0, (args, as_yaml.stderr)
        assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout), args


def test_the_dry_run_in_text_is_for_people(tmp_path: Path) -> None:
    proc = smtrain("submit", str(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}})),
                   "--dry-run", "--job-name", "people-1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Dry run: nothing was sent. CreateTrainingJob people-1 in us-east-1")
    assert "1 x ml.g5.xlarge" in proc.stdout and "-o json" in proc.stdout and not proc.stdout.lstrip().startswith("{")
