"""What a local job wrote outside its hosts' directories, where SageMaker would have found it.

A script that writes to a literal `/opt/ml/model/...` is right on SageMaker (/opt/ml/model is the model
directory there) but, run here, writes into this machine's /opt/ml: every host into the same place, and
nothing reaches the job's model.tar.gz. A process cannot be kept out of /opt/ml without containers, so
the run notes what appeared or changed there (a listing before and after: /opt/ml is absent or small on a
machine that is not a SageMaker container) and names the fix, SM_MODEL_DIR, right in both places.

A script that saves to the `--model_dir` hyperparameter writes, in a local run with a local output, to
<output>/<job>/model, the stand-in of the s3:// URI SageMaker passes there: `model_dir_files` finds it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from smtrain.local.contract import CONTAINER_BASE

WATCHED = Path(CONTAINER_BASE)
LISTING_LIMIT = 20000  # entries looked at under /opt/ml; past that the comparison is skipped, not slowed
SHOWN = 3  # paths named in a note; the rest are counted


@dataclass(frozen=True)
class Listing:
    """Every file under a root with its (mtime_ns, size); `complete` False when the root is too large to list."""

    root: Path
    files: dict[str, tuple[int, int]]
    complete: bool = True


def list_files(root: Path | None = None, limit: int = LISTING_LIMIT) -> Listing:
    """The files under `root` (default WATCHED) and their stat; none when it does not exist."""
    root = root or WATCHED
    files: dict[str, tuple[int, int]] = {}
    for directory, dirs, names in os.walk(root):
        dirs.sort()
        for name in names:
            path = os.path.join(directory, name)
            try:
                stat = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            files[path] = (stat.st_mtime_ns, stat.st_size)
            if len(files) > limit:
                return Listing(root, {}, complete=False)
    return Listing(root, files)


def written(before: Listing, after: Listing) -> list[str]:
    """Files new or changed between the two listings, sorted."""
    if not (before.complete and after.complete):
        return []
    return sorted(path for path, stat in after.files.items() if before.files.get(path) != stat)


def _some(paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def stray_note(paths: list[str]) -> str | None:
    """The note for files the job wrote under this machine's /opt/ml; None when it wrote none."""
    if not paths:
        return None
    return (f"the job wrote under this machine's {WATCHED}, outside its hosts' directories: {_some(paths)}. "
            f"A literal {CONTAINER_BASE} path works on SageMaker only; here every host writes to the same place and "
            "nothing reaches model.tar.gz. Use os.environ[\"SM_MODEL_DIR\"] (the model) or "
            "os.environ[\"SM_OUTPUT_DATA_DIR\"] (other output): right here and on SageMaker")


def model_dir_files(model_dir: str | None) -> list[str]:
    """Files under the local model_dir hyperparameter (a directory of this machine; an s3:// URI has none, and
    /opt/ml/model, what MPI jobs get, is each host's own model directory)."""
    if not model_dir or "://" in model_dir or model_dir.startswith(CONTAINER_BASE + "/"):
        return []
    root = Path(model_dir)
    return sorted(str(p) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def model_dir_note(files: list[str], model_dir: str) -> str | None:
    if not files:
        return None
    return (f"the script saved to --model_dir, here {model_dir} ({_some(files)}), not to SM_MODEL_DIR: that is "
            "not model.tar.gz, and on SageMaker --model_dir is an s3:// URI, where saving with Keras fails. Save "
            "under os.environ[\"SM_MODEL_DIR\"] instead: it becomes model.tar.gz, here and on SageMaker")
