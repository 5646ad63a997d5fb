"""The TensorFlow the hosts will run, found without importing it, and set against the job's tensorflow.version.

Importing TensorFlow costs seconds and must never happen in smtrain's own process, so the hosts' interpreter
is asked, in a subprocess, what its import system and package metadata say (about a tenth of a second).
`require` runs before a job exists: a local run without TensorFlow would only end in a traceback inside the
entry point. `version_note` says when the run's TensorFlow is not the one the job asks for (a Keras 2 job
under Keras 3 fails on changes that look like the script's fault).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass

from smtrain import exit_codes
from smtrain.errors import UserError

# The distributions that install the `tensorflow` module, the usual first.
_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tensorflow-macos", "tensorflow-gpu", "tf-nightly",
                  "tf-nightly-cpu")
_PROBE = """\
import importlib.metadata as metadata, importlib.util, json, sys
version = None
if importlib.util.find_spec("tensorflow") is not None:
    version = "unknown"
    for name in sys.argv[1:]:
        try:
            version = metadata.version(name)
            break
        except metadata.PackageNotFoundError:
            pass
print(json.dumps({"tensorflow": version, "executable": sys.executable}))
"""
KERAS_3_FROM = (2, 16)  # TensorFlow 2.16 made Keras 3 its `tf.keras`


@dataclass(frozen=True)
class Found:
    python: str  # as given (--python, or smtrain's own interpreter)
    tensorflow: str | None  # its version; "unknown" when installed without metadata; None when absent


def probe(python: str) -> Found:
    """What `python` would import as TensorFlow; None as the version when it has none (or cannot say)."""
    try:
        ran = subprocess.run([python, "-c", _PROBE, *_DISTRIBUTIONS], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, errors="replace", timeout=120)
        version = json.loads(ran.stdout)["tensorflow"] if ran.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
        version = None
    return Found(python, version)


def require(found: Found, *, chosen: bool) -> None:
    """Refuse (exit 2) a local run whose hosts' Python has no TensorFlow; `chosen`: it came from --python."""
    if found.tensorflow is not None:
        return
    if chosen:
        raise UserError(f"--python {found.python} has no TensorFlow, which the hosts of a local run import: install "
                        "it there (pip install tensorflow) or point --python at a Python that has it", exit_codes.USAGE)
    raise UserError(f"TensorFlow is not installed in the Python that runs a local job's hosts ({found.python}): "
                    "pip install 'smtrain[local]' (smtrain with TensorFlow for local runs), or pass --python PATH "
                    "of a Python that has it", exit_codes.USAGE)


def _major_minor(version: str) -> tuple[int, int] | None:
    parts = version.split(".")
    if len(parts) < 2:
        return None
    minor = re.match(r"\d+", parts[1])  # "16rc0" is 16
    return (int(parts[0]), int(minor.group())) if parts[0].isdigit() and minor else None


def _keras(version: tuple[int, int]) -> str:
    return "Keras 3" if version >= KERAS_3_FROM else "Keras 2"


def version_note(found: Found, wanted: str | None) -> str | None:
    """A note when the run's TensorFlow is another major.minor than the job's `wanted`; None when they agree
    (or either is unknown: an image_uri job names no version)."""
    if not found.tensorflow or not wanted:
        return None
    have, want = _major_minor(found.tensorflow), _major_minor(wanted)
    if have is None or want is None or have == want:
        return None
    return (f"this run uses TensorFlow {found.tensorflow} ({_keras(have)}) from {found.python}; the job asks for "
            f"{wanted} ({_keras(want)}): run it under that version with --python PATH (a Python with "
            f"tensorflow=={want[0]}.{want[1]}.*) before trusting a failure or a success here")
