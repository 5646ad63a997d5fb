"""`smtrain init --example NAME`: one of the example specs the package carries, written out to use.

The examples are the repository's configs/ (each one tested there), shipped in the wheel as
smtrain/examples/. One is written as configs/NAME.yaml under a directory, with the code/ files it runs,
so that its relative paths (`../.demo/digits`: the data `python -m smtrain.local.demo_data .demo/digits`
writes) mean what the README says, for a pipx or wheel install as for a clone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from smtrain import exit_codes
from smtrain.errors import UserError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FOLDER = "configs"  # as in the repository: the examples' relative paths count from it


@dataclass(frozen=True)
class Written:
    spec: Path
    files: list[Path]  # the spec and the code it runs


def names() -> list[str]:
    return sorted(p.stem for p in EXAMPLES.glob("*.yaml"))


def _text(name: str) -> str:
    return (EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8")


def summary(name: str, width: int = 100) -> str:
    """What the example shows: the first sentence of its opening comment, cut to `width`."""
    lines = []
    for line in _text(name).splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    sentence = " ".join(lines).split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= width else sentence[:width - 3].rstrip() + "..."


def demo_data_command(name: str) -> str | None:
    """The command that writes the local data the example reads, if it reads the demo data."""
    text = _text(name)
    for dataset in ("diabetes", "digits"):
        if f".demo/{dataset}" in text:
            return f"python -m smtrain.local.demo_data .demo/{dataset}" + \
                (f" --dataset {dataset}" if dataset != "digits" else "")
    return None


def _sources(name: str) -> list[Path]:
    """The example's spec, the notebook that drives it when there is one (configs/local-demo.ipynb), then every
    file under the code.source_dir it names (relative to the spec)."""
    spec = EXAMPLES / f"{name}.yaml"
    data = yaml.safe_load(spec.read_text(encoding="utf-8")) or {}
    source_dir = (data.get("code") or {}).get("source_dir")
    files = [spec, *[p for p in [EXAMPLES / f"{name}.ipynb"] if p.is_file()]]
    if source_dir:
        root = (EXAMPLES / source_dir).resolve()
        files += sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return files


def write_example(name: str, directory: Path, *, force: bool) -> Written:
    """configs/NAME.yaml and its code under `directory`; refuses (exit 2) an unknown name or, without
    `force`, a file that exists, before writing anything."""
    known = names()
    if name not in known:
        raise UserError(f"no example named {name!r}: the examples are {', '.join(known)}", exit_codes.USAGE)
    base = EXAMPLES.resolve()
    targets = [(src, directory / FOLDER / src.resolve().relative_to(base)) for src in _sources(name)]
    taken = [str(t) for _, t in targets if t.exists() or t.is_symlink()]
    if taken and not force:
        raise UserError(f"{', '.join(taken)} exist{'s' if len(taken) == 1 else ''}: pass --force to replace "
                        f"{'it' if len(taken) == 1 else 'them'}, or run from another directory", exit_codes.USAGE)
    try:
        for src, target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(src.read_bytes())
    except OSError as exc:
        raise UserError(f"cannot write {exc.filename or directory}: {exc.strerror or exc}", exit_codes.USAGE) from None
    return Written(targets[0][1], [t for _, t in targets])
