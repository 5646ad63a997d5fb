"""smtrain's wheel, built as users get it, and fresh virtual environments to install it in.

Used by the wheel tests (tests/cli/test_wheel.py, tests/cli/test_sdk_beside.py) and by `make bench`'s
installed-size figure, which builds one wheel from the working tree and one from `git archive HEAD`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT

# What the wheel is built from: a copy of these alone, so nothing else of the checkout can leak in.
SOURCES = ("pyproject.toml", "README.md", "smtrain", "entrypoints")


def build_wheel(out_dir: Path, tree: Path = ROOT) -> Path:
    """Build smtrain's wheel from a copy of `tree`'s sources into `out_dir`; the wheel's path.

    No build isolation: the build backend (setuptools) comes from this interpreter, so building
    downloads nothing.
    """
    src = out_dir / "src"
    src.mkdir(parents=True)
    for name in SOURCES:
        if (tree / name).is_dir():
            # Links are followed (smtrain/examples links into configs/): the copy holds their files.
            shutil.copytree(tree / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(tree / name, src / name)
    dist = out_dir / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(dist), str(src)], check=True, capture_output=True, cwd=out_dir)
    (wheel,) = dist.glob("smtrain-*.whl")
    return wheel


def fresh_venv(path: Path, python: str = sys.executable) -> tuple[Path, Path]:
    """A new virtual environment without pip (pip runs from outside: `pip --python`); (its python, its
    site-packages)."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    venv_python = path / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.run([str(venv_python), "-c", purelib], check=True, capture_output=True,
                               text=True).stdout.strip())
    return venv_python, site


def pip(venv_python: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """This interpreter's pip acting on the environment of `venv_python` (which has no pip of its own)."""
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(venv_python), *args,
                           "--disable-pip-version-check", "--no-input"],
                          capture_output=True, text=True, timeout=timeout)
