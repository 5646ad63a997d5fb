"""SageMaker SDK environments the tests use as oracles where the project's own .venv cannot hold them.

SDK v3 (``sagemaker-core>=2.27``) and SDK v2 (``sagemaker<3``, which needs ``sagemaker-core<2``) cannot share
one environment, so v3 gets a venv of its own, built once (about a minute, from the package index) and
cached outside the repository::

    ${SMTRAIN_SDK_V3_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/smtrain/sdk-v3}

Use::

    python = required_sdk_v3_python()      # in a test: the env's python, or skip (fail under CI)
    subprocess.run([str(python), "-c", "from sagemaker.core import image_uris; ..."], ...)

    sdk_v3_python(build=False)             # the env's python if it is ready, else None; never builds

``python -m tests.support.sdk_envs`` builds it if needed and prints its python (`make sdk-v3-env`).
The env counts as ready only when its stamp names the requirement below; the stamp is written last, after
an import check, so a build that was cut off is never taken for a ready one.

SDK v2 alone gets one the same way (``sdk-v2``, ``SMTRAIN_SDK_V2_ENV``; ``required_sdk_v2_python()``,
``python -m tests.support.sdk_envs v2``): the tests that install smtrain beside a user's SDK
(tests/cli/test_sdk_beside.py) need an environment holding SDK v2 and nothing else. The project's .venv
holds v2 too, but also smtrain itself and the container toolkits installed without their dependencies,
so `pip check` fails there whatever smtrain does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

V3_REQUIREMENT = "sagemaker-core>=2.27,<3"
# A build on a machine without the index should give up in a minute, not after pip's default retries.
_PIP_OPTIONS = ("--quiet", "--disable-pip-version-check", "--retries", "1", "--timeout", "20")


class EnvBuildError(RuntimeError):
    """The env could not be built; the message ends with the tail of what the failing step printed."""


@dataclass(frozen=True)
class SdkEnv:
    """One cached SDK environment: what it installs, what it must import before it is stamped ready, and
    the variable that moves it (else ``$XDG_CACHE_HOME/smtrain/sdk-NAME``)."""

    name: str
    requirement: str
    import_check: str
    env_var: str

    @property
    def stamp_name(self) -> str:
        return f".smtrain-sdk-{self.name}-ready"

    @property
    def stamp_head(self) -> str:
        return f"smtrain-sdk-{self.name}-env"

    def dir(self) -> Path:
        explicit = os.environ.get(self.env_var)
        if explicit:
            return Path(explicit)
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(cache) / "smtrain" / f"sdk-{self.name}"


V3 = SdkEnv("v3", V3_REQUIREMENT, "import sagemaker.core.image_uris", "SMTRAIN_SDK_V3_ENV")
# The SDK v2 line that smtrain's test oracle (the `test` extra) is written against.
V2 = SdkEnv("v2", "sagemaker>=2.257,<3", "import sagemaker.tensorflow", "SMTRAIN_SDK_V2_ENV")
ENVS = {env.name: env for env in (V3, V2)}
STAMP_NAME = V3.stamp_name


def v3_env_dir() -> Path:
    """Where the v3 env lives (SMTRAIN_SDK_V3_ENV, else the user's cache)."""
    return V3.dir()


def _ready_python(root: Path, env: SdkEnv = V3) -> Path | None:
    python = root / "bin" / "python"
    try:
        stamp = (root / env.stamp_name).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    if stamp[:2] != [env.stamp_head, env.requirement]:
        return None
    # bin/python links to the interpreter the env was made from: that one must still exist.
    return python if python.exists() and os.access(python, os.X_OK) else None


def _step(argv: list[str], timeout: float) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EnvBuildError(f"{' '.join(argv[:4])} ... did not finish in {timeout:.0f}s") from None
    if done.returncode != 0:
        raise EnvBuildError(f"{' '.join(argv[:4])} ... exited {done.returncode}:\n"
                            f"{(done.stdout + done.stderr)[-2000:]}")
    return done.stdout


def build_sdk_v3_env(root: Path | None = None) -> Path:
    """Build the v3 env at `root` (default v3_env_dir()) unless it is ready; its python. Raises EnvBuildError."""
    return build_sdk_env(V3, root)


def build_sdk_env(env: SdkEnv, root: Path | None = None) -> Path:
    """Build `env` at `root` (default env.dir()) unless it is ready; its python. Raises EnvBuildError.

    It is built in a sibling folder and moved into place whole, so two test processes that build at once
    never see each other's half-built env (the second move loses and keeps the first one's)."""
    root = root or env.dir()
    ready = _ready_python(root, env)
    if ready is not None:
        return ready
    root.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".sdk-{env.name}-build-", dir=root.parent))
    try:
        _step([sys.executable, "-m", "venv", str(work)], 300)
        python = work / "bin" / "python"
        _step([str(python), "-m", "pip", "install", *_PIP_OPTIONS, env.requirement], 600)
        _step([str(python), "-c", env.import_check], 120)
        freeze = _step([str(python), "-m", "pip", "freeze", "--all"], 120)
        (work / env.stamp_name).write_text(f"{env.stamp_head}\n{env.requirement}\n{freeze}", encoding="utf-8")
        # A venv's scripts name its own path; the env is made at a temporary path and moved, so run its
        # python by bin/python only (it finds its site-packages through pyvenv.cfg next to it).
        if root.exists():
            shutil.rmtree(root)
        try:
            work.rename(root)
        except OSError:
            if _ready_python(root, env) is None:
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    python = _ready_python(root, env)
    if python is None:
        raise EnvBuildError(f"the env at {root} was built but its stamp does not read as ready")
    return python


def sdk_v3_python(build: bool = True) -> Path | None:
    """The v3 env's python: built first if `build` and it is not ready; None where it is not ready and
    cannot be built (no package index). Raises nothing."""
    ready = _ready_python(v3_env_dir())
    if ready is not None or not build:
        return ready
    try:
        return build_sdk_v3_env()
    except (EnvBuildError, OSError):
        return None


def required_sdk_v3_python() -> Path:
    """The v3 env's python for a test (built on first use), or skip it with the reason; under CI, fail it
    instead: CI builds the env first (`make test` -> `make sdk-v3-env`), so a missing one is a broken set-up."""
    return required_sdk_python(V3)


def required_sdk_v2_python() -> Path:
    """The v2 env's python for a test, as required_sdk_v3_python() (`make sdk-v2-env`)."""
    return required_sdk_python(V2)


def required_sdk_python(env: SdkEnv) -> Path:
    import pytest

    try:
        return build_sdk_env(env)
    except (EnvBuildError, OSError) as exc:
        message = (f"the SageMaker SDK {env.name} environment ({env.requirement}) is not built and could not be "
                   f"built here (run `make sdk-{env.name}-env` where the package index is reachable): {exc}")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


if __name__ == "__main__":
    # `python -m tests.support.sdk_envs [v3] [v2]`: build those (default v3), print each one's python.
    for name in sys.argv[1:] or ["v3"]:
        print(build_sdk_env(ENVS[name]))
