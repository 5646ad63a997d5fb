"""`submit --local` refuses a place it cannot write, or a --python that cannot run, before making anything.

Each refusal is the user's to fix: one line naming the path and what to do, exit 2, no traceback,
and nothing left behind: no job record (so `list --local` stays empty), no output directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from smtrain.local.backend import LocalBackend, local_request
from tests.local.support import make_plan, spec_file
from tests.support.cli_runner import smtrain

PROC = Path("/proc/self")  # a directory nothing may be created in (Linux)
needs_proc = pytest.mark.skipif(not PROC.is_dir(), reason="needs Linux's /proc")


def submit(spec: Path, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return smtrain("submit", str(spec), "--local", "--job-name", "places-1", *extra,
                   env={"SMTRAIN_HOME": str(home)})


def assert_refused(proc: subprocess.CompletedProcess[str], *named: str) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert all(name in lines[0] for name in named), (named, lines[0])
    return lines[0]


def entries(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir()) if path.is_dir() else []


@pytest.mark.parametrize(("output", "in_the_way"), [
    ("outfile", "outfile"),
    ("outfile/below", "outfile"),
    ("out", "out/source"),  # where the bundle goes
    ("out", "out/places-1"),  # where the archives go
])
def test_an_output_in_the_way_of_a_file_is_refused_and_nothing_is_made(tmp_path: Path, output: str,
                                                                        in_the_way: str) -> None:
    spec = spec_file(tmp_path, {"output": output})
    blocker = tmp_path / in_the_way
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file\n")
    before = entries(blocker.parent)
    line = assert_refused(submit(spec, tmp_path / "home"), str(blocker), "output")
    assert "not a directory" in line
    assert not (tmp_path / "home").exists() and entries(blocker.parent) == before


@pytest.mark.parametrize("home_at", ["homefile", "homefile/below", "home/local-jobs"])
def test_an_smtrain_home_in_the_way_of_a_file_is_refused_and_nothing_is_made(tmp_path: Path, home_at: str) -> None:
    spec = spec_file(tmp_path)
    blocker = tmp_path / ("home/local-jobs" if home_at.startswith("home/") else "homefile")
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file\n")
    home = tmp_path / ("home" if home_at.startswith("home/") else home_at)
    line = assert_refused(submit(spec, home), str(blocker), "SMTRAIN_HOME")
    assert "not a directory" in line
    assert not (tmp_path / "out").exists()


@needs_proc
def test_an_smtrain_home_that_cannot_be_created_is_refused_and_no_output_is_made(tmp_path: Path) -> None:
    spec = spec_file(tmp_path)
    assert_refused(submit(spec, PROC / "smtrain-home"), str(PROC / "smtrain-home"), "SMTRAIN_HOME")
    assert not (tmp_path / "out").exists()


@needs_proc
def test_an_output_that_cannot_be_created_is_refused_and_no_job_is_left(tmp_path: Path) -> None:
    spec = spec_file(tmp_path, {"output": str(PROC / "smtrain-out")})
    assert_refused(submit(spec, tmp_path / "home"), str(PROC / "smtrain-out"), "output")
    assert entries(tmp_path / "home" / "local-jobs") == []
    listed = smtrain("list", "--local", env={"SMTRAIN_HOME": str(tmp_path / "home")})
    assert listed.returncode == 0 and listed.stdout == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in read-only directories")
def test_an_smtrain_home_without_write_permission_is_refused(tmp_path: Path) -> None:
    spec = spec_file(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    try:
        assert_refused(submit(spec, locked / "home"), str(locked), "SMTRAIN_HOME")
    finally:
        locked.chmod(0o755)
    assert not (tmp_path / "out").exists() and entries(locked) == []


@pytest.mark.parametrize("program", ["not a program\n", "#!/bin/sh\nexit 3\n"], ids=["not-executable", "fails"])
def test_a_python_that_cannot_run_is_refused_before_anything_is_made(tmp_path: Path, program: str) -> None:
    spec = spec_file(tmp_path)
    python = tmp_path / "python"
    python.write_text(program)
    python.chmod(0o755 if program.startswith("#!") else 0o644)
    assert_refused(submit(spec, tmp_path / "home", "--python", str(python)), str(python), "--python")
    assert not (tmp_path / "home").exists() and not (tmp_path / "out").exists()


def test_a_refused_place_leaves_the_backend_no_job_and_a_later_run_succeeds(tmp_path: Path) -> None:
    # In process: the same checks through LocalBackend.run, then the same name once the way is clear.
    from smtrain.errors import UserError

    (tmp_path / "out").write_text("a file\n")
    backend = LocalBackend(tmp_path / "home")
    with pytest.raises(UserError, match="not a directory") as refused:
        backend.run(local_request(make_plan(tmp_path), "again"), grace=1)
    assert refused.value.code == 2 and not backend.has("again") and not backend.store.job_dir("again").exists()
    (tmp_path / "out").unlink()
    assert backend.run(local_request(make_plan(tmp_path), "again"), grace=1).status == "Completed"


def test_the_python_check_runs_the_interpreter_it_names(tmp_path: Path) -> None:
    # A working --python other than smtrain's own passes (sys.executable through a script: a link to a venv's
    # python, out of the venv, would be the base interpreter, without the venv's TensorFlow).
    link = wrapped_python(tmp_path, "never-in-the-arguments", "")
    backend = LocalBackend(tmp_path / "home")
    job = backend.run(local_request(make_plan(tmp_path), "linked"), python=str(link), grace=1)
    assert job.status == "Completed", job.failure_reason


def wrapped_python(tmp_path: Path, refuse: str, message: str) -> Path:
    """A --python that is this interpreter except when its arguments hold `refuse`."""
    wrapper = tmp_path / "bin" / "python-wrapper"
    wrapper.parent.mkdir(exist_ok=True)
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *"{refuse}"*) echo "{message}" >&2; exit 5;; esac\n'
                       f'exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def test_a_python_without_venv_is_refused_when_the_job_has_requirements(tmp_path: Path) -> None:
    from smtrain.errors import UserError

    python = wrapped_python(tmp_path, "sys, venv", "No module named venv")  # the probe's import
    backend = LocalBackend(tmp_path / "home")
    assert backend.run(local_request(make_plan(tmp_path), "no-reqs"), python=str(python), grace=1).status == "Completed"
    (tmp_path / "src" / "requirements.txt").write_text("\n")
    with pytest.raises(UserError, match="venv") as refused:
        backend.run(local_request(make_plan(tmp_path), "reqs"), python=str(python), grace=1)
    assert refused.value.code == 2 and "No module named venv" in str(refused.value)
    assert not backend.store.job_dir("reqs").exists()


def test_a_job_environment_that_cannot_be_made_fails_the_job_with_the_reason(tmp_path: Path) -> None:
    python = wrapped_python(tmp_path, "-m venv", "venv exploded")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "requirements.txt").write_text("\n")
    backend = LocalBackend(tmp_path / "home")
    job = backend.run(local_request(make_plan(tmp_path), "env"), python=str(python), grace=1)
    assert job.status == "Failed"
    assert job.failure_reason.startswith("AlgorithmError: InstallRequirementsError: could not create the job's "
                                         "environment")
    assert backend.store.read("env")["processes"] == []  # no host started


def python_without_tensorflow(tmp_path: Path) -> Path:
    """A venv whose Python sees this environment's packages but TensorFlow's (and smtrain from the checkout)."""
    import sysconfig

    from tests.support import ROOT

    venv = tmp_path / "no-tf"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = tmp_path / "packages-but-tensorflow"
    packages.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if not entry.name.lower().startswith(("tensorflow", "tf_keras", "keras", "tensorboard")):
            (packages / entry.name).symlink_to(entry)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "deps.pth").write_text(f"{ROOT}\n{ROOT / 'entrypoints'}\n{packages}\n")
    return venv / "bin" / "python"


def test_a_run_without_tensorflow_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    spec = spec_file(tmp_path)
    python = python_without_tensorflow(tmp_path)
    # --python names an interpreter without TensorFlow: install it there, or name another.
    line = assert_refused(submit(spec, tmp_path / "home", "--python", str(python)), str(python), "--python")
    assert "no TensorFlow" in line
    # smtrain installed without its [local] extra: the hosts' default Python is smtrain's own.
    proc = subprocess.run([str(python), "-m", "smtrain", "submit", str(spec), "--local", "--job-name", "places-1"],
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
                               "SMTRAIN_HOME": str(tmp_path / "home")}, capture_output=True, text=True, timeout=300)
    line = assert_refused(proc, str(python), "pip install 'smtrain[local]'", "--python")
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (tmp_path / "home").exists() and not (tmp_path / "out").exists()


def _version(distribution: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def test_a_run_under_another_tensorflow_than_the_jobs_says_which_and_how_to_run_the_jobs(tmp_path: Path) -> None:
    import io

    installed = next(v for v in map(_version, ("tensorflow-cpu", "tensorflow")) if v)
    here = ".".join(installed.split(".")[:2])
    other = "2.13" if here != "2.13" else "2.21"
    backend = LocalBackend(tmp_path / "home")
    notes = {}
    for version in (here, other):
        stream = io.StringIO()
        plan = make_plan(tmp_path, {"tensorflow": {"version": version}})
        assert backend.run(local_request(plan, f"tf-{version.replace('.', '-')}"), stream=stream,
                           grace=1).status == "Completed"
        notes[version] = [line for line in stream.getvalue().splitlines() if "this run uses TensorFlow" in line]
    assert notes[here] == []
    [note] = notes[other]
    keras = "Keras 2" if other == "2.13" else "Keras 3"
    keras_here = "Keras 3" if tuple(map(int, here.split("."))) >= (2, 16) else "Keras 2"
    assert f"this run uses TensorFlow {installed} ({keras_here})" in note
    assert f"from {sys.executable}; the job asks for {other} ({keras})" in note and "--python PATH" in note
