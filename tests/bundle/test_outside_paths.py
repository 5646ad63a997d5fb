"""Nothing from outside the code root ships, is read or is installed.

The entry point lies inside source_dir; a file the spec names on purpose (code.requirements) may lie
elsewhere but gets the same secret checks as any shipped file; and no symbolic link, hidden by the
ignore rules or not, takes a file from outside where it lies. Each refusal is exit 2 at the field,
and the outside file's bytes reach no output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.cli_runner import smtrain

# A private key's shape, with a canary inside: it must appear in no output.
CANARY = "CANARY-OUTSIDE-BYTES-7f3a"
PRIVATE_KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{CANARY}\n-----END OPENSSH PRIVATE KEY-----\n"


def _project(tmp_path: Path, code: dict, ignore: str = "") -> Path:
    outside = tmp_path / "home" / ".ssh"
    outside.mkdir(parents=True)
    (outside / "id_rsa").write_text(PRIVATE_KEY)
    src = tmp_path / "project" / "src"
    src.mkdir(parents=True)
    (src / "train.py").write_text("print('training')\n")
    if ignore:
        (src / ".smtrainignore").write_text(ignore)
    spec = {"name": "outside", "role": "arn:aws:iam::123456789012:role/SageMakerRole", "region": "us-east-1",
            "compute": {"instance_type": "ml.g5.xlarge"}, "code": {"source_dir": "src", **code}, "output": "out"}
    path = tmp_path / "project" / "job.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _refused(spec: Path, field: str) -> str:
    env = {"SMTRAIN_HOME": str(spec.parent / "smtrain-home")}
    for args in (["validate", str(spec)], ["submit", str(spec), "--dry-run"], ["submit", str(spec), "--local"]):
        proc = smtrain(*args, env=env, cwd=spec.parent)
        assert proc.returncode == 2, (args, proc.stdout[-2000:], proc.stderr[-2000:])
        assert CANARY not in proc.stdout + proc.stderr
        assert f"{field}:" in proc.stderr, (args, proc.stderr)
    assert not (spec.parent / "smtrain-home" / "local-jobs").exists() or not any(
        (spec.parent / "smtrain-home" / "local-jobs").iterdir())
    return proc.stderr


@pytest.mark.parametrize("hidden", [False, True], ids=["plain", "hidden-by-smtrainignore"])
def test_a_requirements_link_to_outside_is_refused_hidden_or_not(tmp_path: Path, hidden: bool) -> None:
    spec = _project(tmp_path, {"entry_point": "train.py", "requirements": "requirements.txt"},
                    ignore="requirements.txt\n" if hidden else "")
    (spec.parent / "src" / "requirements.txt").symlink_to(tmp_path / "home" / ".ssh" / "id_rsa")
    said = _refused(spec, "code.requirements")
    assert "is a symbolic link to" in said and "outside" in said


def test_a_requirements_file_outside_source_dir_gets_the_secret_checks(tmp_path: Path) -> None:
    spec = _project(tmp_path, {"entry_point": "train.py", "requirements": "../requirements.txt"})
    (spec.parent / "requirements.txt").write_text(PRIVATE_KEY)
    said = _refused(spec, "code.source_dir")
    assert "refusing to upload files that look like secrets" in said and "requirements.txt" in said


@pytest.mark.parametrize("entry_point", ["../outside.py", "/etc/passwd", "link.py"])
def test_an_entry_point_outside_source_dir_is_refused(tmp_path: Path, entry_point: str) -> None:
    spec = _project(tmp_path, {"entry_point": entry_point})
    (spec.parent / "outside.py").write_text(f"# {CANARY}\nprint('outside')\n")
    (spec.parent / "src" / "link.py").symlink_to(spec.parent / "outside.py")
    said = _refused(spec, "code.entry_point")
    assert f"{entry_point} is not inside source_dir" in said


def test_an_entry_point_the_ignore_rules_leave_out_is_refused(tmp_path: Path) -> None:
    spec = _project(tmp_path, {"entry_point": "train.py"}, ignore="*.py\n")
    said = _refused(spec, "code.entry_point")
    assert "train.py is left out of the bundle by the ignore rules" in said and "!train.py" in said
