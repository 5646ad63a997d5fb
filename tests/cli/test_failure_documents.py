"""With -o json / -o yaml a failing command still prints one document on stdout (its exit code, the error, the
spec's problems with their lines), so a CI step's parser always gets one; the message stays on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.cli_runner import smtrain
from tests.support.specfiles import write_spec


@pytest.mark.parametrize("command", [["submit", "--dry-run"], ["plan"], ["check"], ["tune", "--dry-run"]])
def test_a_spec_with_problems_is_a_document_with_each_problem(tmp_path: Path, command: list[str]) -> None:
    spec = write_spec(tmp_path, {"tensorflow": {"version": "2.19", "python": "py99"}})
    proc = smtrain(command[0], str(spec), *command[1:], "-o", "json", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    document = json.loads(proc.stdout)
    assert (document["ok"], document["exit_code"]) == (False, 2)
    [problem] = [p for p in document["problems"] if p["field"] == "tensorflow.python"]
    assert problem["line"] is not None and "'py99' is not a Python tag" in problem["message"]
    assert "tensorflow.python: 'py99' is not a Python tag" in proc.stderr


def test_an_error_is_a_document_in_yaml_too(tmp_path: Path) -> None:
    proc = smtrain("status", "no-such-job", "-o", "yaml", cwd=tmp_path, timeout=60,
                   env={"SMTRAIN_HOME": str(tmp_path / "home"), "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
                        "AWS_CONFIG_FILE": str(tmp_path / "none")})
    assert proc.returncode == 4, proc.stderr
    document = yaml.safe_load(proc.stdout)
    assert document["ok"] is False and document["exit_code"] == 4
    assert document["error"].startswith("no local job named no-such-job")


@pytest.mark.parametrize("args, error", [
    (["status", "-o", "json", "--bogus"], "No such option '--bogus'."),
    (["submit", "--output=yaml"], "Missing argument 'SPEC'."),
    (["nosuch", "-ojson"], "No such command 'nosuch'."),
    (["wait", "a-job", "--timeout", "soon", "-o", "json"], "Invalid value for --timeout: 'soon' is not a duration"),
])
def test_a_usage_error_of_a_line_asking_for_json_or_yaml_is_a_document_too(tmp_path: Path, args: list[str],
                                                                           error: str) -> None:
    proc = smtrain(*args, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stderr
    document = yaml.safe_load(proc.stdout)  # JSON is YAML too
    assert (document["ok"], document["exit_code"], document["problems"]) == (False, 2, [])
    assert document["error"].startswith(error)
    assert "Usage: smtrain" in proc.stderr and f"Error: {error}" in proc.stderr


@pytest.mark.parametrize("args", [["status", "--bogus"], ["status", "--bogus", "-o", "xml"],
                                  ["status", "--", "-o", "json", "--bogus"]])
def test_a_usage_error_in_text_prints_nothing_on_stdout(tmp_path: Path, args: list[str]) -> None:
    proc = smtrain(*args, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
