"""Locate the Horovod test environment built by ``scripts/horovod-env.sh`` and launch MPI jobs in it.

Tests that need Horovod (or the smdistributed test double in ``tests/doubles``) run their
training script with that env's interpreter under ``mpirun``::

    py = horovod_python()
    if py is None:
        pytest.skip("Horovod env not built: run scripts/horovod-env.sh")
    env = {**os.environ, "PYTHONPATH": str(DOUBLES_DIR)}   # only if it imports smdistributed
    argv = mpirun_base(2, env=env) + [str(py), "-m", "mpi4py", "train.py"]
    subprocess.run(argv, env=env, timeout=300)

A rank that dies makes mpirun end the others, but a rank that hangs does not: always pass a
timeout, and on expiry kill the process group (TensorFlow may ignore SIGTERM).

``mpirun_base`` forwards the variables named in ``export`` (plus PATH, PYTHONPATH and
LD_LIBRARY_PATH) with ``-x``; all other variables reach the ranks too when every rank runs on
this host, because Open MPI starts them from mpirun's own environment.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping

from tests.support import ROOT

REPO_ROOT = ROOT
BUILD_SCRIPT = REPO_ROOT / "scripts" / "horovod-env.sh"
# Put this on PYTHONPATH to make ``import smdistributed.dataparallel.tensorflow`` find the double.
DOUBLES_DIR = ROOT / "tests" / "doubles"

STAMP_NAME = ".smtrain-horovod-ready"
# What the stamp must name for the env to be the one the tests were written against.
REQUIRED_PINS = ("tensorflow-cpu==2.13.1", "horovod==0.28.1")

ALWAYS_EXPORTED = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH")


def env_dir() -> pathlib.Path:
    """Where the build script puts the env (same rule as the script)."""
    explicit = os.environ.get("SMTRAIN_HOROVOD_ENV")
    if explicit:
        return pathlib.Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(cache) / "smtrain" / "horovod-tf2.13"


def horovod_python() -> pathlib.Path | None:
    """The env's python, if the build script's stamp says the env is ready; otherwise None.

    Does not start Python or import anything: the build script already ran its smoke check
    before it wrote the stamp.
    """
    root = env_dir()
    python = root / "bin" / "python"
    try:
        stamp = (root / STAMP_NAME).read_text().splitlines()
    except OSError:
        return None
    if not stamp or not stamp[0].startswith("smtrain-horovod-env"):
        return None
    if any(pin not in stamp for pin in REQUIRED_PINS):
        return None
    # bin/python is a link to the interpreter the env was made from; that one must still exist.
    if not (python.exists() and os.access(python, os.X_OK)):
        return None
    return python


def mpirun_base(
    np: int, export: Iterable[str] = (), env: Mapping[str, str] | None = None
) -> list[str]:
    """The ``mpirun`` argv prefix that starts ``np`` ranks on this machine.

    ``env`` is the environment mpirun will be started with (default: ``os.environ``); only the
    variables set there are passed with ``-x``. To check what a rank printed, add
    ``--output-filename DIR`` and read it with ``rank_output(DIR, rank)``, never from mpirun's
    own stream (see ``rank_output``).

    Flags, as measured on a 2-core container running as root (Open MPI 4.1):
    - ``--allow-run-as-root`` (only when uid is 0): without it mpirun refuses to start.
    - ``--oversubscribe``: without it ``-np 3`` on 2 cores fails ("not enough slots").
    - ``--bind-to none``: by default each rank is pinned to one core (``-np 1`` gets core 0 only
      and concurrent jobs all pile onto the same cores), which starves TensorFlow's thread pools.
    - ``--mca btl self,vader``: ranks on one host talk over shared memory; no TCP transport is
      loaded, so ranks open no listening sockets.
    - ``--mca btl_vader_single_copy_mechanism none``: not needed on this machine, but the
      default cross-memory-attach copy needs ptrace rights that many containers deny, and the
      failure only shows on messages above a few KiB; the cost is one extra copy.
    - ``--mca oob_tcp_if_include lo``: mpirun's own control channel advertises loopback only,
      never another interface the machine may have. (Loopback must be up: with no usable
      interface at all PMIx cannot start.)
    - ``-x NAME``: forwards NAME to the ranks. Ranks on this host inherit mpirun's whole
      environment anyway; ``-x`` matters once ranks run elsewhere, and an unset NAME only
      draws a warning, so only names set in ``env`` are passed.
    """
    if np < 1:
        raise ValueError(f"np must be >= 1, not {np}")
    mpirun = shutil.which("mpirun") or "mpirun"
    argv = [mpirun, "-np", str(np)]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    argv += [
        "--oversubscribe",
        "--bind-to", "none",
        "--mca", "btl", "self,vader",
        "--mca", "btl_vader_single_copy_mechanism", "none",
        "--mca", "oob_tcp_if_include", "lo",
    ]
    environ = os.environ if env is None else env
    for name in dict.fromkeys([*ALWAYS_EXPORTED, *export]):
        if name in environ:
            argv += ["-x", name]
    return argv


# The tag --tag-output puts before every chunk of a rank's output: [jobid,rank]<stream>:
_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err|diag)>:")


def rank_output(output_dir: os.PathLike[str] | str, rank: int, streams: Iterable[str] = ("stdout",)) -> str:
    """What ``rank`` wrote, from the files ``mpirun --output-filename output_dir`` keeps per rank.

    mpirun's own stdout cannot be read line by line: Open MPI forwards a rank's output in the
    chunks it happens to read from the rank's pipe and tags each chunk without ending it with a
    newline, so another rank's chunk can land inside a line (a Python rank under PYTHONUNBUFFERED
    writes a print()'s text and its newline in two write() calls; a busy rank's lines are cut at
    read boundaries too). Nothing is lost: each rank's file holds all its chunks in order, so with
    the tags removed it is exactly what the rank wrote.
    """
    [rank_dir] = pathlib.Path(output_dir).glob(f"*/rank.{rank}")  # <output_dir>/<job>/rank.<N>/
    text = "".join((rank_dir / s).read_text(errors="replace") for s in streams if (rank_dir / s).exists())
    return _TAG.sub("", text)


def run_two_ranks(python: os.PathLike[str] | str, script: os.PathLike[str] | str, args: Iterable[str],
                  env: Mapping[str, str], ranks_dir: os.PathLike[str] | str, timeout: float) -> tuple[int, str]:
    """`mpirun -np 2 python -m mpi4py script args` (as SageMaker's toolkit starts ranks); (status, output).

    mpirun's stream interleaves the ranks' output: each rank's also goes to its own files under
    `ranks_dir` (read them with rank_output). A run past `timeout` is killed whole, since a hung
    rank ignores SIGTERM, and fails the test with its output.
    """
    argv = mpirun_base(2, env=env) + ["--tag-output", "--output-filename", str(ranks_dir), str(python), "-m",
                                      "mpi4py", str(script), *args]
    proc = subprocess.Popen(argv, env=dict(env), cwd=str(pathlib.Path(script).parent), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"mpirun did not finish in {timeout}s:\n{out[-4000:]}") from None
    return proc.returncode, out


def required_horovod_python() -> pathlib.Path:
    """The Horovod env's Python (TF 2.13, Keras 2), or skip the test; under CI, fail it instead:
    CI builds the env first (`make test`), so a missing one there is a broken set-up, not a skip."""
    import pytest

    python = horovod_python()
    if python is None:
        message = "the Horovod environment (TF 2.13, Keras 2) is not built: run `make horovod-env`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return python
