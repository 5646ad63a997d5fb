"""Nothing from outside the code root ships, is read or is installed.

The entry point lies inside source_dir; a file the spec names on purpose (code.requirements) may lie
elsewhere but gets the same secret checks as any shipped file; and no symbolic link, hidden by the
ignore rules or not, takes a file from outside where it lies. Each refusal is exit 2 at the field,
and the outside file's bytes reach no output. The same for a committed repository named in code.git:
its links are checked out as links, and a path out of the checkout would reach smtrain's cache.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
import yaml

from smtrain.bundle.request import make_bundle
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from tests.bundle.test_git_source import git, write
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


def _refused(spec: Path, field: str, **more_env: str) -> str:
    env = {"SMTRAIN_HOME": str(spec.parent / "smtrain-home"), **more_env}
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


# --------------------------------------------------------------------------- the same through code.git

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git program")

def _repository(tmp_path: Path, code: dict, links: dict[str, Path | str], committed: dict[str, str]) -> Path:
    """A committed repository (tmp_path/project/repo) with `links` (path -> target) committed as symbolic
    links, forced past its .gitignore; a spec naming its src/ in code.git; the canaries outside it."""
    outside = tmp_path / "home" / ".ssh"
    outside.mkdir(parents=True)
    (outside / "id_rsa").write_text(PRIVATE_KEY)
    (tmp_path / "home" / "outside.py").write_text(f"# {CANARY}\nprint('outside')\n")
    repo = tmp_path / "project" / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch", "main")
    write(repo, {"src/train.py": "print('training')\n", **committed})
    for rel, target in links.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).symlink_to(target)
    git(repo, "add", "--force", "-A")
    git(repo, "commit", "--quiet", "-m", "links")
    spec = {"name": "outside", "role": "arn:aws:iam::123456789012:role/SageMakerRole", "region": "us-east-1",
            "compute": {"instance_type": "ml.g5.xlarge"},
            "code": {"git": {"repository": "repo", "branch": "main", "directory": "src"}, **code}, "output": "out"}
    path = tmp_path / "project" / "job.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _git_refused(spec: Path, field: str) -> str:
    return _refused(spec, field, XDG_CACHE_HOME=str(spec.parent / "cache"))


HOME_KEY = ("home", ".ssh", "id_rsa")


@needs_git
@pytest.mark.parametrize(("code", "links", "committed", "field", "message"), [
    ({"entry_point": "train.py", "requirements": "requirements.txt"}, {"src/requirements.txt": HOME_KEY}, {},
     "code.requirements", "is a symbolic link to"),
    ({"entry_point": "train.py", "requirements": "requirements.txt"}, {"src/requirements.txt": HOME_KEY},
     {"src/.gitignore": "requirements.txt\n"}, "code.requirements", "is a symbolic link to"),
    ({"entry_point": "train.py", "requirements": "requirements.txt"}, {"src/requirements.txt": HOME_KEY},
     {"src/.smtrainignore": "requirements.txt\n"}, "code.requirements", "is a symbolic link to"),
    # relative, out of the checkout into smtrain's cache (trees/<commit>/src/../../../repo.git)
    ({"entry_point": "train.py", "requirements": "requirements.txt"},
     {"src/requirements.txt": "../../../repo.git/config"}, {}, "code.requirements", "is a symbolic link to"),
    # a path, not a link, out of the checkout: it too would read smtrain's cache, never the user's file
    ({"entry_point": "train.py", "requirements": "../../../repo.git/config"}, {}, {}, "code.requirements",
     "../../../repo.git/config is not inside repo at"),
    ({"entry_point": "train.py"}, {"src/notes.txt": HOME_KEY}, {}, "code.git", "notes.txt is a symbolic link to"),
    ({"entry_point": "train.py"}, {"src/keys": HOME_KEY[:2]}, {}, "code.git", "keys is a symbolic link to"),
    ({"entry_point": "link.py"}, {"src/link.py": ("home", "outside.py")}, {}, "code.entry_point",
     "link.py is not inside"),
    ({"entry_point": "../../../home/outside.py"}, {}, {}, "code.entry_point", "is not inside"),
], ids=["requirements-link", "requirements-link-gitignored", "requirements-link-smtrainignored",
        "requirements-link-into-the-cache", "requirements-path-into-the-cache", "file-link", "directory-link",
        "entry-point-link", "entry-point-path"])
def test_a_git_repository_link_or_path_to_outside_is_refused(tmp_path: Path, code: dict, links: dict,
                                                              committed: dict, field: str, message: str) -> None:
    targets = {rel: tmp_path.joinpath(*t) if isinstance(t, tuple) else t for rel, t in links.items()}
    said = _git_refused(_repository(tmp_path, code, targets, committed), field)
    assert message in said, said


@needs_git
def test_git_links_the_ignore_rules_leave_out_ship_nothing(tmp_path: Path) -> None:
    """Committed links to outside that .gitignore and .smtrainignore hide, none named by the spec: the job
    runs, and the outside bytes are in no bundle, no file of the local job and no output."""
    links = {"src/secret.txt": tmp_path.joinpath(*HOME_KEY), "src/keys": tmp_path.joinpath(*HOME_KEY[:2]),
             "src/hidden.py": tmp_path / "home" / "outside.py"}
    spec = _repository(tmp_path, {"entry_point": "train.py"}, links,
                       {"src/.gitignore": "secret.txt\nkeys\n", "src/.smtrainignore": "hidden.py\n"})
    env = {"SMTRAIN_HOME": str(spec.parent / "smtrain-home"), "XDG_CACHE_HOME": str(spec.parent / "cache")}
    proc = smtrain("submit", str(spec), "--local", env=env, cwd=spec.parent)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    assert "training" in proc.stdout + proc.stderr and CANARY not in proc.stdout + proc.stderr
    job_files = [p for p in (spec.parent / "smtrain-home").rglob("*") if p.is_file() and not p.is_symlink()]
    assert job_files and not [p for p in job_files if CANARY.encode() in p.read_bytes()]

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
        bundle = make_bundle(build_plan(load_spec(spec), load_catalog()))
    assert CANARY.encode() not in gzip.decompress(bundle.data)
    assert {f.path for f in bundle.files if f.origin == "source"} == {"train.py", ".gitignore"}
