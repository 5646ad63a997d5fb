"""smtrain.check: the job's own code run twice here for its first steps, on one device standing for the planned
replicas and in the planned layout, and the two set side by side (smtrain.local.check_verdict).

Both runs are local runs of the same bundle (hosts as processes, logical CPU devices as replicas), under their
own SMTRAIN_HOME in a temporary directory, with the spec's output moved there too: nothing of the user's is
written. A layout larger than this machine should run (more than 2 hosts, or 2 replicas per host) is checked
on a smaller one of the same structure, which the result says.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smtrain import exit_codes
from smtrain.api.code_checks import refuse_findings
from smtrain.api.planning import Planned, plan
from smtrain.api.specs import Overrides, SpecSource, override_texts
from smtrain.errors import UserError
from smtrain.local.check_verdict import plural
from smtrain.redact import mask_text

if TYPE_CHECKING:
    from smtrain.plan.catalog import Catalog

DEFAULT_STEPS = 20
MAX_HOSTS = 2  # the largest layout a check runs on this machine: enough to show what several hosts do
MAX_REPLICAS_PER_HOST = 2
RANDOM_LAYER_CHOICES = ("on", "off")


class CannotCheckError(UserError):
    """The job cannot be compared step by step (exit 2): its message says why and what would make it checkable."""

    def __init__(self, why: str) -> None:
        super().__init__(f"cannot check this job: {why}", exit_codes.USAGE)


@dataclass(frozen=True)
class CheckResult:
    """What `smtrain check` found: `equivalent`, the verdict (smtrain.local.check_verdict.Verdict), the layouts."""

    job: str
    program: str  # bundled, own or wrapped
    verdict: Any  # smtrain.local.check_verdict.Verdict
    planned_layout: dict[str, Any]
    checked_layout: dict[str, Any]
    one_device: dict[str, Any]
    seconds: dict[str, float]
    notes: tuple[str, ...] = field(default=())

    @property
    def equivalent(self) -> bool:
        """Whether the planned layout trained as one device would: the same losses and weights, step by step."""
        return bool(self.verdict.equivalent)

    @property
    def exit_code(self) -> int:
        """0 equivalent, 1 not (the CLI's exit status)."""
        return exit_codes.OK if self.equivalent else exit_codes.FAILED

    def to_dict(self) -> dict[str, Any]:
        """`smtrain check -o json`'s document."""
        return {"job": self.job, "equivalent": self.equivalent, "program": self.program,
                "planned_layout": self.planned_layout, "checked_layout": self.checked_layout,
                "one_device": self.one_device, "seconds": self.seconds, "notes": list(self.notes),
                **{k: v for k, v in self.verdict.to_dict().items() if k not in ("equivalent", "notes")}}

    def __repr__(self) -> str:
        return mask_text(f"<CheckResult {self.job}: {'equivalent' if self.equivalent else 'not equivalent'}>")

    def _repr_html_(self) -> str:
        from smtrain.api.display import fields_table

        return fields_table(self.title(), self.rows())

    def title(self) -> str:
        """One line: the job and the verdict (from which step it differs, when it does)."""
        verdict = "equivalent" if self.equivalent else f"not equivalent, from step {self.verdict.first_step}"
        return f"check {self.job}: {verdict}"

    def rows(self) -> list[tuple[str, str]]:
        """What the CLI's text and the notebook's table show, row by row: (label, text)."""
        data = self.to_dict()
        rows = [("planned", _layout_text(data["planned_layout"])),
                ("checked on", _layout_text(data["checked_layout"]) + (", as planned" if _same(data) else
                                                                       ": the same structure, smaller"))]
        one = data["one_device"]
        if one.get("global_batch") is not None:
            rate = f", learning rate {one['learning_rate']:g}" if one.get("learning_rate") is not None else ""
            checked = "" if _same(data) else (f" (the {one['stands_for']} checked; the plan has "
                                               f"{data['planned_layout']['replicas']})")
            rows.append(("one device", f"standing for {one['stands_for']} replicas{checked}: global batch "
                                       f"{one['global_batch']}{rate}"))
        if data["per_step"]:
            rows.append(("loss", f"{data['steps']} steps, largest relative difference {_number(data['loss_difference'])} "
                                 f"(step {data['loss_step']}); tolerance {data['loss_tolerance']:g}"))
        if data["weights_difference"] is not None:
            rows.append(("weights", f"after step {data['steps']}: relative difference "
                                    f"{_number(data['weights_difference'])} (most in {data['weights_name']}); tolerance "
                                    f"{data['weights_tolerance']:g}"))
        if data["equivalent"] and data["per_step"]:
            rows.append(("tolerances", data["tolerance_why"]))
        else:
            first = data["first_step"]
            step = next((r for r in data["per_step"] if r["step"] == first), None)
            if step is not None:
                rows.append((f"step {first}", f"loss {_number(step['one_device'], '.6g')} on one device, "
                                              f"{_number(step['planned_run'], '.6g')} in the planned layout (relative "
                                              f"difference {_number(step['relative'])})"))
            for cause in data["causes"]:
                rows += [("cause", cause["says"]), ("fix", cause["fix"])]
        rows += [("note", note) for note in data["notes"]]
        if data["seconds"]:
            rows.append(("time", ", ".join(f"{'one device' if k == 'one_device' else 'planned layout'} {v:.1f}s"
                                           for k, v in data["seconds"].items())))
        return rows


def _same(data: dict[str, Any]) -> bool:
    checked, planned = data["checked_layout"], data["planned_layout"]
    return (checked["hosts"], checked["replicas_per_host"]) == (planned["hosts"], planned["replicas_per_host"])


def _number(value: float | None, spec: str = ".1e") -> str:
    """A figure of the JSON document as text: null (a NaN loss, an infinite difference) reads `nan`."""
    return "nan" if value is None else format(value, spec)


def _layout_text(layout: dict[str, Any]) -> str:
    return (f"{plural(layout['hosts'], 'host')} x {plural(layout['replicas_per_host'], 'replica')} "
            f"({layout['strategy']}{', ' + layout['gpu'] if layout.get('gpu') else ''})")


def _data_overrides(found: Planned, data: Mapping[str, str] | Sequence[str] | None, *,
                    remote_needs_sample: bool = True) -> list[tuple[str, Any]]:
    """--data NAME=PATH as overrides of the spec's channels; an s3:// channel without one is refused (unless
    nothing will run)."""
    given: dict[str, str] = {}
    for item in (data.items() if isinstance(data, Mapping) else (data or ())):
        name, _, path = item.partition("=") if isinstance(item, str) else (item[0], "=", item[1])
        if not name or not path:
            raise UserError(f"--data {item!r}: give NAME=PATH, such as train=./sample", exit_codes.USAGE)
        given[name] = str(path)
    inputs = found.plan.spec.inputs
    unknown = sorted(set(given) - set(inputs))
    if unknown:
        raise UserError(f"--data {unknown[0]}: the spec has no input channel {unknown[0]!r} (it has: "
                        f"{', '.join(inputs) or 'none'})", exit_codes.USAGE)
    remote = [name for name, channel in inputs.items() if name not in given and (
        channel.uri is None or "://" in channel.uri and not channel.uri.startswith("file://"))]
    if remote and remote_needs_sample:  # every one at once, each at its line
        from smtrain.spec.problems import SpecError

        raise SpecError([found.loaded.problem(("inputs", name), f"{inputs[name].uri or 'a file system'}: the check "
                                              "trains here, on a "
                                              f"local sample of it; give one with --data {name}=./sample (a few "
                                              "hundred examples in the channel's format)") for name in remote])
    for name, path in given.items():
        local = Path(path.removeprefix("file://")).expanduser()
        if not local.exists():
            raise UserError(f"--data {name}={path}: no such file or directory", exit_codes.USAGE)
    return [(f"inputs.{name}", str(Path(path.removeprefix("file://")).expanduser().resolve()))
            for name, path in given.items()]


def _script_reading(found: Planned) -> Any:
    """The entry point and the bundle's modules it imports, read (smtrain.bundle.script_reading)."""
    from smtrain.bundle.request import make_bundle
    from smtrain.bundle.script_reading import ScriptReading
    from smtrain.plan import program

    return ScriptReading(make_bundle(found.plan).data, program.script_program(found.plan.spec))


def _refuse_what_cannot_be_checked(found: Planned) -> None:
    from smtrain.plan import program

    strategy = found.plan.strategy
    if found.plan.instance_groups:
        raise CannotCheckError("its heterogeneous cluster (compute.instance_groups) gives each group its own part, "
                               "which a local run cannot lay out yet; check the training group's script with a copy "
                               "of the spec with compute.instance_type and nodes instead")
    if strategy == "parameter_server":
        raise CannotCheckError("its parameter-server workers train on steps the chief only schedules, in no fixed "
                               "order, so no step can be set against one device's")
    if strategy in ("horovod", "smddp"):
        raise CannotCheckError(f"distribution {strategy} is not checked yet: the check compares tf.distribute "
                               "strategies (mirrored, multi_worker_mirrored)")
    kind = program.kind(found.plan.spec)
    if kind == program.BUNDLED:
        return
    script = found.plan.spec.code.entry_point
    reading = _script_reading(found)
    fits = reading.names("fit", "fit_generator")
    if kind == program.OWN and not reading.reaches("smtrain_tf"):
        wrap = ("set code.wrap: true (the script runs unchanged and the wrap controls its model.fit), or train with "
                "smtrain_tf.fit" if fits else "train with smtrain_tf.fit (no model.fit was found in it or the "
                "bundle's modules it imports, and model.fit is what code.wrap would control)")
        raise CannotCheckError(f"{script} trains with its own loop, which the check cannot stop after a few steps or "
                               f"feed in a fixed order; make it checkable: {wrap}")
    if kind == program.WRAPPED and not fits:
        raise CannotCheckError(f"no model.fit was found in {script} or the bundle's modules it imports, and model.fit "
                               "is the call a check records (Keras's own, as the paid job runs it): a loop of its own "
                               "cannot be checked; train with model.fit or smtrain_tf.fit")


@dataclass(frozen=True)
class _Layout:
    hosts: int
    replicas_per_host: int  # in the check
    planned_hosts: int
    planned_per_host: int

    @property
    def replicas(self) -> int:
        return self.hosts * self.replicas_per_host


def _layout(found: Planned) -> _Layout:
    from smtrain.local import replica_layout

    planned = found.plan
    hosts = min(planned.nodes, MAX_HOSTS)
    chosen = replica_layout.choose(planned, None)  # one per host under TensorFlow's multi-worker strategies
    per_host = min(chosen.used, MAX_REPLICAS_PER_HOST)
    return _Layout(hosts=hosts, replicas_per_host=per_host, planned_hosts=planned.nodes,
                   planned_per_host=chosen.planned * chosen.processes_per_host)


def _minutes(steps: int) -> int:
    """The time a check run may take: start-up, and half a minute a step (a large model on CPU)."""
    return 5 + (int(steps) + 1) // 2


def _describe(hosts: int, per_host: int, strategy: str, gpu: str = "") -> dict[str, Any]:
    return {"hosts": hosts, "replicas_per_host": per_host, "replicas": hosts * per_host, "strategy": strategy,
            **({"gpu": gpu} if gpu else {})}


def _run(found: Planned, name: str, home: Path, directory: Path, environment: dict[str, str],
         replicas_per_host: int, python: str | None, log: Any) -> Any:
    from smtrain_tf.check.settings import DIR_VAR

    from smtrain.local.backend import LocalBackend, local_request

    directory.mkdir(parents=True)
    scratch = directory.parent / "tmp"  # TensorFlow's own temporary files (autograph's) go with the check's
    scratch.mkdir(exist_ok=True)
    request = local_request(found.plan, name)
    return LocalBackend(home).run(request, stream=log, replicas_per_host=replicas_per_host, python=python,
                                  extra_environment={**environment, DIR_VAR: str(directory), "TMPDIR": str(scratch)})


def check(spec: SpecSource, overrides: Overrides = None, *, data: Mapping[str, str] | Sequence[str] | None = None,
          steps: int = DEFAULT_STEPS, random_layers: str = "on", python: str | None = None,
          catalog: Catalog | str | os.PathLike[str] | None = None,
          progress: Callable[[str], None] = lambda line: None) -> CheckResult:
    """Run the job's first `steps` steps on one device with the planned global batch and rate, then in the
    planned layout (at most 2 hosts x 2 replicas here), and compare each step's loss and the weights after.

    `data`: local samples for input channels ({"train": "./sample"} or ["train=./sample"]); an s3:// channel
    needs one. `random_layers="off"` turns dropout and noise layers off in both runs, to check the rest.
    `progress` sees a line as each run starts and ends. Raises SpecError, PreflightError, CannotCheckError
    (exit 2) and UserError; the result's `equivalent` says the verdict.
    """
    import smtrain_tf.check.settings as names

    from smtrain.local.check_records import CannotCheck, read_run
    from smtrain.local.check_verdict import compare, failed, failed_after_training

    if int(steps) < 1:
        raise UserError(f"--steps {steps}: at least 1", exit_codes.USAGE)
    if random_layers not in RANDOM_LAYER_CHOICES:
        raise UserError(f"--random-layers {random_layers}: on or off", exit_codes.USAGE)
    found = plan(spec, overrides, catalog=catalog)
    refuse_findings(found.findings, strict=False)
    _refuse_what_cannot_be_checked(found)
    layout = _layout(found)
    if layout.planned_hosts * layout.planned_per_host == 1:
        _data_overrides(found, data, remote_needs_sample=False)  # a wrong --data is still refused
        return _one_device_plan(found, layout)
    if layout.replicas == 1:
        raise CannotCheckError(f"its plan trains {layout.planned_per_host} replicas on one host under "
                               f"{found.plan.strategy}, which gives a worker without GPUs one device here (TensorFlow's "
                               "rule), so the planned replicas cannot be run on this machine; check it with "
                               "distribution.strategy: mirrored, which trains the same replicas on one host")
    samples = _data_overrides(found, data)
    seed = found.plan.spec.training.seed
    common = {names.STEPS_VAR: str(int(steps)), names.SEED_VAR: str(42 if seed is None else seed),
              **({names.RANDOM_VAR: "off"} if random_layers == "off" else {})}
    name = found.plan.spec.name[:40]
    seconds: dict[str, float] = {}
    work = Path(tempfile.mkdtemp(prefix="smtrain-check-"))
    keep = False  # the work directory stays only when an error names its log
    try:
        compute = found.plan.spec.compute
        # The planned instance kept (auto could choose another for fewer nodes), the output moved.
        keep_instance = [("compute.instance_type", found.plan.instance.name)] \
            if compute.instance_type == "auto" and not compute.prefer else []
        # A few steps need minutes, not the job's max_run: code that never reaches a recorded loop trains on
        # until this limit, and then cannot be checked.
        limit = ("compute.max_run", f"{_minutes(steps)}m")
        base = [*override_texts(overrides), *samples, *keep_instance, limit, ("output", str(work / "output"))]
        one = plan(spec, [*base, ("compute.nodes", 1)], catalog=catalog)
        planned = plan(spec, [*base, ("compute.nodes", layout.hosts)], catalog=catalog)
        with open(work / "check.log", "w", encoding="utf-8") as log:
            progress(f"check: one device standing for {layout.replicas} replicas, {steps} steps")
            began = time.monotonic()
            info = _run(one, f"{name}-check-one-device", work / "home", work / "one-device",
                        {**common, names.STANDS_FOR_VAR: str(layout.replicas)}, 1, python, log)
            seconds["one_device"] = round(time.monotonic() - began, 1)
            try:
                reference = read_run(work / "one-device")
            except CannotCheck as exc:
                raise CannotCheckError(str(exc)) from None
            # A wrapped script runs to its end in both runs: one that recorded its steps and failed after them (its
            # evaluate, a save) is compared all the same, and the failure is the verdict's first cause.
            one_failed = (info.failure_reason or f"the run ended {info.status}") \
                if info.status != "Completed" and reference is not None else None
            if (info.status != "Completed" and one_failed is None) or reference is None:
                keep = True
                raise CannotCheckError(_one_device_failed(info, reference is None, steps, work / "check.log"))
            progress(f"check: the planned layout, {plural(layout.hosts, 'host')} x "
                     f"{plural(layout.replicas_per_host, 'replica')}, {steps} steps")
            began = time.monotonic()
            info = _run(planned, f"{name}-check-planned", work / "home", work / "planned",
                        {**common, names.REFERENCE_VAR: str(work / "one-device")}, layout.replicas_per_host, python,
                        log)
            seconds["planned"] = round(time.monotonic() - began, 1)
            try:
                mine = read_run(work / "planned")
            except CannotCheck as exc:
                raise CannotCheckError(str(exc)) from None
            scaling = _spec_scaling(found.plan)
            if mine is None:
                verdict = failed(info.failure_reason or "it wrote no record of its steps")
            elif info.status != "Completed" and _program(found.plan) == "wrapped":  # it went on past its steps
                verdict = failed_after_training(info.failure_reason or f"the run ended {info.status}",
                                                compare(reference, mine, scaling), one_device=one_failed)
            elif one_failed is not None:
                verdict = failed_after_training(one_failed, compare(reference, mine, scaling), one_device=one_failed,
                                                planned=False)
            else:
                verdict = compare(reference, mine, scaling)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    plan_ = found.plan
    notes = []
    if random_layers == "off":
        notes.append("dropout and noise layers were off in both runs (--random-layers off): what they do per replica "
                     "was not compared")
    notes.extend(verdict.notes)  # which fit calls and steps it covered, and what it saw beside its causes
    if _program(plan_) == "wrapped":
        notes.append("both runs seeded every worker's random generators (Python's, NumPy's, TensorFlow's) from the "
                     "job's seed (training.seed, 42 without one), as the wrap does in the paid job: what "
                     "the script leaves unseeded is drawn alike on every host")
    if (layout.hosts, layout.replicas_per_host) != (layout.planned_hosts, layout.planned_per_host):
        notes.append(f"the planned layout ({layout.planned_hosts} x {layout.planned_per_host}) is checked on "
                     f"{layout.hosts} x {layout.replicas_per_host}: the same structure, smaller (a check runs at most "
                     f"{MAX_HOSTS} hosts and {MAX_REPLICAS_PER_HOST} replicas per host, and TensorFlow's multi-worker "
                     "strategies give a worker without GPUs one)")
    return CheckResult(
        job=plan_.spec.name, program=_program(plan_), verdict=verdict,
        planned_layout=_describe(layout.planned_hosts, layout.planned_per_host, plan_.strategy,
                                 plan_.instance.gpu if plan_.instance.gpus else ""),
        checked_layout=_describe(layout.hosts, layout.replicas_per_host, planned.plan.strategy),
        one_device={"stands_for": layout.replicas, "global_batch": reference.steps[0].examples if reference.steps
                    else None, "learning_rate": reference.steps[0].learning_rate if reference.steps else None},
        seconds=seconds, notes=tuple(notes))


def _one_device_plan(found: Planned, layout: _Layout) -> CheckResult:
    """A plan of one replica trains as one device does by definition: nothing to run or compare."""
    from smtrain.local.check_verdict import Verdict

    plan_ = found.plan
    where = _describe(layout.planned_hosts, layout.planned_per_host, plan_.strategy,
                      plan_.instance.gpu if plan_.instance.gpus else "")
    return CheckResult(job=plan_.spec.name, program=_program(plan_), verdict=Verdict(
        equivalent=True, steps=0, loss_difference=None, loss_step=0, weights_difference=None, weights_name=None,
        first_step=None), planned_layout=where, checked_layout=where, one_device={"stands_for": 1},
        seconds={}, notes=("the plan trains on one device (one replica): there is nothing to compare, so nothing ran",))


def _one_device_failed(info: Any, unrecorded: bool, steps: int, log: Path) -> str:
    """Why the one-device run gave nothing to compare: its failure, or code that never reached a fit the check records."""
    reason = info.failure_reason or info.status
    if "MaxRuntimeExceeded" in reason or (info.status == "Completed" and unrecorded):
        return (f"its code did not reach a training loop the check records (smtrain_tf.fit, or model.fit under code.wrap) "
                f"{'within ' + str(_minutes(steps)) + ' minutes' if info.status != 'Completed' else 'before it ended'}"
                f", so no step was recorded: a loop of its own cannot be checked; its output is in {log}")
    return f"it fails on one device, before anything could be compared: {reason}; its output is in {log}"


def _program(found_plan: Any) -> str:
    from smtrain.plan import program

    return program.kind(found_plan.spec)


def _spec_scaling(found_plan: Any) -> str | None:
    """training.lr_scaling where the spec scales this program's rate: the bundled entrypoint always, a wrapped
    script when the spec sets it (smtrain.plan.program), an own script never."""
    training, kind = found_plan.spec.training, _program(found_plan)
    if kind == "bundled" or (kind == "wrapped" and "lr_scaling" in training.model_fields_set):
        return None if training.lr_scaling == "none" else training.lr_scaling
    return None
