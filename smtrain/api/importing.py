"""import_launcher(), import_job(): an SDK v2 launcher (.py or .ipynb) or an existing training job -> a spec file
that sends the same request, and what could not be carried over, each with where it is written and why."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from smtrain import exit_codes
from smtrain.errors import UserError

__all__ = ["ImportResult", "import_job", "import_launcher"]


@dataclass(frozen=True)
class ImportResult:
    spec_file: Path
    notes: tuple[str, ...]  # "launch.py:12: metric_definitions: left out: ..." (README "Coming from the SageMaker SDK")
    taken: tuple[str, ...]  # values taken from the launcher's defaults (argparse), which it may be run without
    variables: tuple[str, ...]  # environment variables the spec reads for what the launcher looks up when it runs
    code_dir: Path | None = None  # import_job: where the job's code was unpacked


def _target(spec_file: Path, force: bool) -> None:
    if spec_file.is_dir():
        raise UserError(f"{spec_file} is a directory: name the spec file to write", exit_codes.USAGE)
    if (spec_file.exists() or spec_file.is_symlink()) and not force:
        raise UserError(f"{spec_file} exists: pass --force to replace it, or name another file", exit_codes.USAGE)


def _write(spec_file: Path, text: str) -> None:
    """The spec written whole or not at all (a full disk leaves the old file, and no temporary one)."""
    try:
        spec_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=spec_file.parent, prefix=f".{spec_file.name}.", suffix=".tmp")
    except OSError as exc:
        raise UserError(f"cannot write {spec_file}: {exc.strerror or exc}", exit_codes.USAGE) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, spec_file)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise UserError(f"cannot write {spec_file}: {exc.strerror or exc}", exit_codes.USAGE) from None
        raise


def _result(imported: object, spec_file: Path, came_from: str, code_dir: Path | None = None) -> ImportResult:
    from smtrain.spec.imported_spec import imported_text
    from smtrain.spec.sdk_arguments import Imported

    assert isinstance(imported, Imported)
    _write(spec_file, imported_text(imported, came_from))
    return ImportResult(spec_file, tuple(n.render() for n in imported.notes if not n.taken),
                        tuple(n.render() for n in imported.notes if n.taken), imported.variables, code_dir)


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def import_launcher(launcher: str | os.PathLike[str], spec_file: str | os.PathLike[str] | None = None, *,
                    force: bool = False) -> ImportResult:
    """Write the spec that sends what the SDK v2 launcher (a .py script or .ipynb notebook) sends.

    The launcher is read, never run: its code paths are taken relative to its own directory (where it is run
    from). `spec_file` defaults to job.yaml beside it; an existing file is replaced only with `force`.
    Raises UserError (exit 2) when the launcher cannot be read or builds no estimator.
    """
    from smtrain.spec.launcher import LauncherError, read_launcher
    from smtrain.spec.sdk_arguments import spec_data

    path = Path(launcher)
    if not path.is_file():
        raise UserError(f"{path}: no such file" if not path.exists() else f"{path}: not a file", exit_codes.USAGE)
    if path.suffix not in (".py", ".ipynb"):
        raise UserError(f"{path}: not a Python script (.py) or notebook (.ipynb)", exit_codes.USAGE)
    target = Path(spec_file) if spec_file is not None else path.parent / "job.yaml"
    _target(target, force)
    try:
        read = read_launcher(path)
    except LauncherError as exc:
        raise UserError(str(exc), exit_codes.USAGE) from None
    return _result(spec_data(read, _relative(path.parent, target.parent)), target, path.name)


def import_job(name: str, spec_file: str | os.PathLike[str] | None = None, *,
               code_dir: str | os.PathLike[str] | None = None, region: str | None = None,
               force: bool = False) -> ImportResult:
    """Write the spec that makes training job `name` again (DescribeTrainingJob, its tags), its code archive
    unpacked into `code_dir` (default: NAME-code beside the spec; it must not exist) as code.source_dir.

    Raises AwsError (exit 4) for an unknown job or an AWS failure, UserError (exit 2) for the files here.
    """
    from smtrain.aws import default_region
    from smtrain.sagemaker.job_import import described_launcher
    from smtrain.spec.sdk_arguments import spec_data

    region = region or default_region() or "us-east-1"
    target = Path(spec_file) if spec_file is not None else Path(f"{name}.yaml")
    _target(target, force)
    code = Path(code_dir) if code_dir is not None else target.parent / f"{name}-code"
    if code.exists() or code.is_symlink():
        raise UserError(f"{code} exists: the job's code is unpacked into a new directory; name another with "
                        "--download-code DIR", exit_codes.USAGE)
    shown = _relative(code, target.parent)
    launcher = described_launcher(name, region, code, shown)
    try:
        result = _result(spec_data(launcher, region=region), target, f"training job {name} ({region})",
                         code if code.exists() else None)
    except BaseException:
        import shutil

        shutil.rmtree(code, ignore_errors=True)  # nothing half-made is left: a rerun starts clean
        raise
    return result
