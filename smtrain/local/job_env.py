"""The Python a local job runs with: the hosts' interpreter, plus the bundle's requirements.txt.

SageMaker's toolkit pip-installs a requirements.txt found at the root of the code directory into
the container's Python before it starts the entry point. Locally that would change smtrain's
own environment, so a job with requirements gets its own virtual environment in the job
directory: the packages of the base interpreter stay visible (a .pth file names its
site-packages, so TensorFlow is not installed again) and pip adds or upgrades only what the
file asks for, running in the code directory as the toolkit does. If pip fails, the job fails
before any host starts, with pip's last lines as the reason. pip runs under a keeper
(smtrain.local.lifeline), so it ends with smtrain however smtrain ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

from smtrain import exit_codes
from smtrain.bundle.job_requirements import split_added
from smtrain.errors import UserError
from smtrain.local.lifeline import Lifeline

REQUIREMENTS = "requirements.txt"
PIP_TIMEOUT = 1800.0


class RequirementsError(Exception):
    """pip could not install the requirements; the message is the job's failure reason."""


def check_python(python: str, *, needs_venv: bool) -> None:
    """Refuse (UserError, exit 2) a --python that does not run Python 3, or lacks venv where the job needs one."""
    probe = "import sys" + (", venv" if needs_venv else "") + "; print('python', sys.version_info[0])"
    fix = "point --python at a Python 3 interpreter" + (" with the venv module (the job has requirements.txt)"
                                                         if needs_venv else "")
    try:
        ran = subprocess.run([python, "-c", probe], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             errors="replace", timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UserError(f"--python {python} cannot run: {getattr(exc, 'strerror', None) or exc}; {fix}",
                        exit_codes.USAGE) from None
    if ran.returncode != 0 or ran.stdout.strip() != "python 3":
        said = " / ".join(line.strip() for line in ran.stderr.splitlines()[-2:] if line.strip())
        raise UserError(f"--python {python} is not a working Python 3 (exit code {ran.returncode}"
                        f"{': ' + said if said else ''}); {fix}", exit_codes.USAGE)


def _site_dirs(python: str) -> list[str]:
    """The site-packages directories of `python`, in its own order."""
    probe = ("import json,site,sysconfig; p=sysconfig.get_paths(); "
             "print(json.dumps(list(dict.fromkeys(site.getsitepackages()+[p['purelib'],p['platlib']]))))")
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return [d for d in json.loads(out.stdout) if os.path.isdir(d)]


def _venv_python(env_dir: Path) -> Path:
    return env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def create_env(env_dir: Path, base_python: str) -> Path:
    """A virtual environment at `env_dir` that also sees `base_python`'s packages; its python."""
    sites = _site_dirs(base_python)
    if Path(base_python).resolve() == Path(sys.executable).resolve():
        venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(env_dir)
    else:
        subprocess.run([base_python, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=300)
    python = _venv_python(env_dir)
    own = _site_dirs(str(python))
    # Appended after the environment's own site-packages: what pip installs here wins.
    (Path(own[0]) / "_smtrain_base_packages.pth").write_text("\n".join(sites) + "\n", encoding="utf-8")
    return python


def _for_this_tensorflow(line: str, tensorflow: str | None) -> str | None:
    """An added tf-keras line matched to the TensorFlow this machine runs (the image's is another); None where
    that TensorFlow's own tf.keras is Keras 2 already (2.15 or older). Any other line (the MLflow client of
    tracking.mlflow) as it is."""
    if not _is_tf_keras(line) or tensorflow is None or not tensorflow[:1].isdigit():
        return line
    parts = [int(p) for p in tensorflow.split(".")[:2] if p.isdigit()]
    if tuple(parts) < (2, 16):
        return None
    return f"tf-keras~={parts[0]}.{parts[1]}.0"


def _is_tf_keras(line: str) -> bool:
    return line.replace("_", "-").lower().startswith("tf-keras")


def install_requirements(code_dir: Path, env_dir: Path, base_python: str, emit: Callable[[str], None],
                         pip_python: str | None = None, tensorflow: str | None = None) -> str:
    """The interpreter for the hosts: `base_python`, or a job environment with requirements.txt installed.

    pip runs from `pip_python` (default: this process's interpreter) against the new environment.
    The lines smtrain added to the file: tf-keras (tensorflow.keras: 2) is installed for `tensorflow`, the
    version the hosts run, and without its dependencies: tf-keras asks for the `tensorflow` project, which pip
    would install again beside a `tensorflow-cpu` (the same package under another name); the MLflow client
    (tracking.mlflow) with its dependencies, as SageMaker's toolkit installs it.
    Raises RequirementsError when pip fails.
    """
    requirements = code_dir / REQUIREMENTS
    if not requirements.is_file():
        return base_python
    own, added = split_added(requirements.read_text(encoding="utf-8", errors="replace"))
    if added:
        requirements.write_text(own, encoding="utf-8")  # this host's copy: the added lines are installed below
    ours = bool(added)
    added = [line for line in (_for_this_tensorflow(a, tensorflow) for a in added) if line]
    # Without smtrain's lines, the file is pip's as it stands (as the toolkit runs it, empty or not).
    wanted = not ours or any(line.strip() and not line.lstrip().startswith("#") for line in own.splitlines())
    if not wanted and not added:
        return base_python
    emit(f"installing {REQUIREMENTS} into the job's environment {env_dir}")
    try:
        python = create_env(env_dir, base_python)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:  # ValueError: a probe's output not JSON
        raise RequirementsError(f"InstallRequirementsError: could not create the job's environment {env_dir}: "
                                f"{exc}") from exc
    pip = [pip_python or sys.executable, "-m", "pip", "--python", str(python), "install", "--disable-pip-version-check"]
    if wanted:
        _pip(pip + ["-r", REQUIREMENTS], code_dir, emit)
    keras_lines = [line for line in added if _is_tf_keras(line)]
    others = [line for line in added if not _is_tf_keras(line)]
    if others:  # the MLflow client (tracking.mlflow): with what it needs
        emit(f"installing what smtrain added: {' '.join(others)}")
        _pip(pip + others, code_dir, emit)
    if keras_lines:
        emit(f"installing what smtrain added for this machine's TensorFlow {tensorflow}: {' '.join(keras_lines)}")
        _pip(pip + ["--no-deps", *keras_lines], code_dir, emit)
    return str(python)


def _pip(argv: list[str], code_dir: Path, emit: Callable[[str], None]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_REQUIRE_VIRTUALENV", "PYTHONPATH")}
    tail: list[str] = []
    with Lifeline() as lifeline:  # pip ends with smtrain (SIGKILL included), or when this block is left
        proc = subprocess.Popen(lifeline.command(argv), cwd=code_dir, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                start_new_session=True, pass_fds=lifeline.pass_fds)
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            emit(f"pip: {line}")
            tail = (tail + [line])[-5:]
        code = proc.wait(timeout=PIP_TIMEOUT)
    if code != 0:
        detail = " / ".join(t.strip() for t in tail if t.strip())
        what = " ".join(a for a in argv[5:] if a != "--disable-pip-version-check")
        raise RequirementsError(f"InstallRequirementsError: pip {what} exited with {code}: {detail}")
