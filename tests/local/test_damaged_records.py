"""A local job's record.json damaged on disk (empty, cut short, another JSON value, a wrong date, a hosts string):
every command that reads it says which file and what is wrong, exit 2, never exit 70; `list` shows the job as
unreadable and the others as they are; nothing is left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_runner import smtrain

GOOD = {"name": "good-1", "status": "Completed", "secondary_status": "Completed", "created": "2026-11-28T07:00:00Z",
        "started": "2026-11-28T07:00:01Z", "ended": "2026-11-28T07:01:00Z", "instance_type": "ml.g5.xlarge",
        "instance_count": 1, "hosts": ["algo-1"], "processes": []}


def _home(tmp_path: Path, damaged: str) -> Path:
    home = tmp_path / "home"
    for name, text in (("good-1", json.dumps(GOOD)), ("bad-1", damaged)):
        (home / "local-jobs" / name).mkdir(parents=True)
        (home / "local-jobs" / name / "record.json").write_text(text)
    return home


@pytest.mark.parametrize("damaged, cause", [
    ("", "not JSON"),
    (json.dumps(GOOD)[:40], "not JSON"),
    ("[]", "a JSON list, not an object"),
    (json.dumps({**GOOD, "name": "bad-1", "created": "yesterday"}), "created 'yesterday' is not a UTC time"),
    (json.dumps({**GOOD, "name": "bad-1", "created": "2026-11-28T07:00:00"}), "is not a UTC time"),  # no zone
    (json.dumps({**GOOD, "name": "bad-1", "hosts": "algo-1"}), "hosts is not a list of host names"),
    (json.dumps({**GOOD, "name": "bad-1", "status": "Done"}), "status 'Done' is none of"),
], ids=["empty", "truncated", "list", "date", "naive-date", "hosts-string", "status"])
def test_a_damaged_record_is_named_with_its_cause_and_hides_no_other_job(tmp_path: Path, damaged: str,
                                                                         cause: str) -> None:
    home = _home(tmp_path, damaged)
    env = {"SMTRAIN_HOME": str(home)}
    record = home / "local-jobs" / "bad-1" / "record.json"
    # Each command that reads a record, for one damage; `status` for every one (they share one reader).
    commands = [["status", "bad-1"]] + ([["wait", "bad-1"], ["stop", "bad-1"], ["metrics", "bad-1"],
                                         ["tensorboard", "bad-1", "--no-launch"]] if damaged == "[]" else [])
    for command in commands:
        proc = smtrain(*command, env=env, cwd=tmp_path, timeout=60)
        assert proc.returncode == 2, (command, proc.stderr)
        assert f"error: local job bad-1: its record {record} cannot be read: " in proc.stderr, (command, proc.stderr)
        assert cause in proc.stderr and "Traceback" not in proc.stderr
    listed = smtrain("list", "--local", "-o", "json", env=env, cwd=tmp_path, timeout=60)
    assert listed.returncode == 0, listed.stderr
    jobs = {job["name"]: job for job in json.loads(listed.stdout)["jobs"]}
    assert jobs["good-1"]["status"] == "Completed"
    assert jobs["bad-1"]["status"] == "Unknown" and jobs["bad-1"]["failure_reason"].startswith("record unreadable: ")
    if damaged == "[]":
        table = smtrain("list", "--local", env=env, cwd=tmp_path, timeout=60)
        assert table.returncode == 0 and "good-1" in table.stdout and "bad-1" in table.stdout
    assert record.read_text() == damaged  # read, never rewritten
    assert sorted(p.name for p in record.parent.iterdir()) == ["record.json"]  # no temporary file left
