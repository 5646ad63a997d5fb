"""model.tar.gz and output.tar.gz, as SageMaker makes them at the end of a job.

SageMaker tars the model directory (/opt/ml/model) and the output data directory
(/opt/ml/output/data) of every host into one archive each, the hosts' files merged (a file
that several hosts wrote comes from the last of them, as the SDK's local mode also does).
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Sequence
from pathlib import Path


def _merged(roots: Sequence[Path]) -> tuple[dict[str, Path], set[str]]:
    """Archive path -> file, and every directory, over `roots` in order (later roots win)."""
    files: dict[str, Path] = {}
    dirs: set[str] = set()
    for root in roots:
        if not root.is_dir():
            continue
        for current, subdirs, names in os.walk(root, followlinks=True):
            rel = Path(current).relative_to(root).as_posix()
            if rel != ".":
                dirs.add(rel)
            for name in names:
                path = Path(current) / name
                files[path.relative_to(root).as_posix()] = path
            subdirs.sort()
    return files, dirs


def write_archive(roots: Sequence[Path], target: Path) -> Path:
    """A .tar.gz of the merged `roots` at `target` (written through a temporary name)."""
    files, dirs = _merged(roots)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        with tarfile.open(tmp, "w:gz", dereference=True) as tar:
            for name in sorted(dirs | set(files)):
                if name in files:
                    tar.add(files[name], arcname=name, recursive=False)
                else:
                    info = tarfile.TarInfo(name)
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    tar.addfile(info)
        os.replace(tmp, target)
    except BaseException:  # a full disk, a read-only directory, a signal: no partial archive is left
        tmp.unlink(missing_ok=True)
        raise
    return target
