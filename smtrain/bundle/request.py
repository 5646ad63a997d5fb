"""Plan -> Request: the job's bundle, its name, and where the bundle goes (content-addressed).

Both backends start from a Request: SageMaker uploads the bundle to `source_uri`; a local run
unpacks the same bytes on each host.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from smtrain.bundle.build import plan_bundle, s3_key_for, write_bundle
from smtrain.bundle.entrypoint import entrypoint_parts
from smtrain.bundle.job_requirements import with_added
from smtrain.bundle.model import Bundle, BundleError, PlannedBundle
from smtrain.bundle.own_places import default_home
from smtrain.errors import UserError
from smtrain.plan import tracking
from smtrain.plan.build import Plan
from smtrain.spec.local_uri import local_path
from smtrain.spec.notebook import NotebookError, is_notebook, notebook_script

# SageMaker's limit on TrainingJobName.
JOB_NAME_MAX = 63


def new_job_name(prefix: str, now: dt.datetime | None = None, suffix: str | None = None) -> str:
    """<prefix>-<UTC yyyymmdd-HHMMSS>-<4 hex>: sortable, and unique across quick re-submits."""
    now = now or dt.datetime.now(dt.timezone.utc)
    suffix = suffix or secrets.token_hex(2)
    name = f"{prefix}-{now.astimezone(dt.timezone.utc):%Y%m%d-%H%M%S}-{suffix}"
    if len(name) > JOB_NAME_MAX:
        raise ValueError(f"job name {name!r} is longer than {JOB_NAME_MAX} characters")
    return name


def own_places(plan: Plan) -> list[Path]:
    """smtrain's own directories that a source dir may hold: SMTRAIN_HOME, and the spec's output when local."""
    places = [default_home()]
    if not plan.spec.output.startswith("s3://"):
        try:
            places.append(local_path(plan.spec.output, plan.base_dir))
        except UserError:
            pass  # a file:// URI of another machine: refused where a run would write there, not here
    return places


def check_bundle(plan: Plan) -> PlannedBundle:
    """The files of this job's bundle, every refusal and warning of a build, nothing packed (validate, plan)."""
    code = plan.spec.code
    source = (plan.base_dir / code.source_dir).resolve() if code.source_dir else None
    made, program, left_out = _notebook_script(plan, source)
    planned = plan_bundle(entrypoint_parts(), source, code.requirements, use_gitignore=code.use_gitignore,
                          allow=code.allow_secrets, max_size=code.max_bundle_size, leave_out=own_places(plan),
                          made=made, dependencies=[(plan.base_dir / d).resolve() for d in code.dependencies])
    if plan.keras is not None and plan.keras.requirement:
        planned = with_added(planned, (plan.keras.requirement,), "tensorflow.keras: 2 (Keras 2 through tf_keras)")
    planned = with_added(planned, tracking.requirements(plan.spec), "tracking.mlflow (the MLflow client for the "
                         "job's run)")
    if left_out:  # said where the bundle's warnings are said: validate, plan, and before a job is sent
        planned = replace(planned, warnings=(*planned.warnings, *left_out))
    shipped_data = _data_beside_the_code(plan, planned)
    if shipped_data:
        planned = replace(planned, warnings=(*planned.warnings, shipped_data))
    if code.entry_point and source is not None:
        name = PurePosixPath(os.path.normpath(code.entry_point).replace(os.sep, "/")).as_posix()
        if (program or name) not in {f.path for f in planned.files if f.origin == "source"}:
            # SageMaker starts the program from the unpacked bundle: "can't open file" after start-up.
            raise BundleError(f"{code.entry_point} is left out of the bundle by the ignore rules (.smtrainignore"
                              f"{', .gitignore' if code.use_gitignore else ''}): the job could not start it; "
                              f"remove the rule that matches it, or add !{name} after it", ("code", "entry_point"))
    return planned


# Files that hold training data rather than code: shipped with the code, a script reads them in place of a channel.
_DATA_SUFFIXES = (".npz", ".npy", ".csv", ".tsv", ".tfrecord", ".tfrecords", ".parquet", ".jsonl", ".arrow",
                  ".feather", ".pkl", ".pickle", ".txt.gz", ".csv.gz", ".tfrecord.gz", ".zip", ".tar", ".tar.gz",
                  ".tgz", ".png", ".jpg", ".jpeg")
_DATA_NAMED = 5  # the files a warning names; the rest are counted


def _data_beside_the_code(plan: Plan, planned: PlannedBundle) -> str | None:
    """A spec of an own script that names no inputs, beside data files its source_dir ships: the job would train
    on that copy (uploaded with every job, read from the code directory) or on nothing. A warning naming them."""
    if plan.spec.inputs or not plan.spec.code.entry_point:
        return None
    data = sorted(f.path for f in planned.files if f.origin == "source" and f.path.lower().endswith(_DATA_SUFFIXES))
    if not data:
        return None
    named = ", ".join(data[:_DATA_NAMED]) + (f" and {len(data) - _DATA_NAMED} more" if len(data) > _DATA_NAMED else "")
    return (f"the spec gives no inputs, and source_dir ships data files with the code ({named}): the job reads that "
            "copy from the code directory, if anything; give the data as a channel (inputs: {train: s3://...}, "
            "read from SM_CHANNEL_TRAIN) and leave it out of the bundle (.smtrainignore)")


def _notebook_script(plan: Plan, source: Path | None
                     ) -> tuple[dict[str, tuple[str, bytes]], str | None, list[str]]:
    """A notebook entry point: {its path: (its script's path, the script)} for plan_bundle, the script's path, and
    a line for each cell left out of the job (one that drives smtrain)."""
    entry = plan.spec.code.entry_point
    if not entry or source is None or not is_notebook(entry):
        return {}, None, []
    try:
        script = notebook_script(source / entry, entry)
    except NotebookError as exc:  # the spec's check names every problem; here, for a plan made without it
        raise BundleError(exc.messages()[0], ("code", "entry_point")) from None
    cells: dict[int, list[tuple[int, str]]] = {}
    for cell, line, why in script.left_out:
        cells.setdefault(cell, []).append((line, why))
    left_out = [f"{script.notebook}, cell {cell}: left out of the job (what drives smtrain runs here, not in the "
                f"job; a notebook of its own for it silences this): "
                + "; ".join(f"line {line}: {why}" for line, why in found) for cell, found in cells.items()]
    return {script.notebook: (script.program, script.data)}, script.program, left_out


def make_bundle(plan: Plan) -> Bundle:
    """The sourcedir.tar.gz of this job: the bundled entrypoint plus the user's code."""
    return write_bundle(check_bundle(plan))


@dataclass(frozen=True)
class Request:
    """Everything a backend needs to start the job, decided before anything is sent."""

    plan: Plan
    job_name: str
    bundle: Bundle
    source_uri: str  # where the bundle lives (content-addressed)

    def git_summary(self) -> dict[str, Any] | None:
        """code.git: the repository and the commit the bundle was made from; None for source_dir."""
        return self.plan.git.summary() if self.plan.git else None

    def upload_summary(self) -> dict[str, Any]:
        return {"uri": self.source_uri, "bytes": self.bundle.size, "sha256": self.bundle.sha256,
                "git": self.git_summary(),
                "files": [{"path": f.path, "bytes": f.size, "from": f.origin} for f in self.bundle.files]}


def make_request(plan: Plan, job_name: str | None = None) -> Request:
    bundle = make_bundle(plan)
    return Request(plan, job_name or new_job_name(plan.spec.name), bundle, s3_key_for(plan.spec.output, bundle))
