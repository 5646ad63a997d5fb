"""How results are shown: text for people, JSON/YAML with stable keys for pipelines."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from typing import Any

import click

from smtrain.cli.capacity_lines import dry_run_lines, instances_text, plan_lines
from smtrain.cli.closed_output import stdout_console
from smtrain.cli.costs import cost_cell, cost_rows
from smtrain.jobs import EventFiles, JobInfo, LogEvent, reattach_command
from smtrain.plan.build import Plan
from smtrain.plan.catalog import InstanceType, Price, gib_text
from smtrain.preflight.scan import StandIn
from smtrain.redact import StreamMasker, mask_data, mask_text
from smtrain.spec.problems import Problem, dotted
from smtrain.spec.units import format_duration


def problem_dict(p: Problem) -> dict[str, Any]:
    loc = p.location
    return {"file": loc.source if loc else None, "line": loc.line if loc else None,
            "column": loc.column if loc else None, "field": ".".join(map(str, p.path)), "message": p.message}


def echo_problems(problems: Iterable[Problem], *, label: str = "error") -> None:
    for p in problems:
        click.echo(mask_text(f"{label}: {p.render()}"), err=True)  # a message may quote a secret value


def valid_text(spec_file: str, plan: Plan, local_only: Sequence[Problem] = ()) -> str:
    """validate's verdict: valid, or valid for --local only (naming the fields that make it so)."""
    where = f"({plan.strategy} on {plan.nodes} x {plan.instance.name})"
    if plan.instance_groups:  # the strategy's group (or the image's) is one of several
        where = (f"({plan.strategy} on {plan.nodes} x {plan.instance.name}, one of "
                 f"{len(plan.instance_groups)} instance groups)")
    if not local_only:
        return mask_text(f"{spec_file}: valid {where}")
    fields = ", ".join(dotted(p.path) for p in local_only)
    return mask_text(f"{spec_file}: valid for --local only: {fields} name places on this machine {where}")


def dump(data: Any, fmt: str, *, mask: bool = True) -> None:
    """JSON or YAML on stdout, secrets masked in the data before rendering (so the output stays valid).

    `mask=False` only for constant documents (the JSON Schema, whose field `allow_secrets` is no secret).
    """
    data = mask_data(data) if mask else data
    context = click.get_current_context(silent=True)
    if context is not None:  # the command's document is out: a failure after it adds no second one (guard.py)
        context.find_root().meta["smtrain.document_printed"] = True
    if fmt == "yaml":
        import yaml  # already loaded by the spec reader; local to keep this module's surface small

        click.echo(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120), nl=False)
    else:
        click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def dump_line(data: Any, fmt: str = "json") -> None:
    """One item of a stream such as logs: a JSON Lines document, or an item of one YAML list."""
    data = mask_data(data)
    if fmt == "yaml":
        import yaml

        click.echo(yaml.safe_dump([data], sort_keys=False, default_flow_style=False, width=120), nl=False)
    else:
        click.echo(json.dumps(data, separators=(",", ":"), default=str))


def dry_run_text(rendered: dict[str, Any], region: str) -> str:
    """`submit --dry-run` for people: what the job would be; the whole request is -o json / -o yaml."""
    request, upload = rendered["request"], rendered["upload"]
    algorithm, resources = request["AlgorithmSpecification"], request["ResourceConfig"]
    stop = request.get("StoppingCondition", {})
    lines = [f"Dry run: nothing was sent. CreateTrainingJob {rendered['job_name']} in {region}",
             f"  image         {algorithm.get('TrainingImage', '-')}",
             f"  instances     {instances_text(resources)}, {resources.get('VolumeSizeInGB', '-')} GB volume",
             f"  max run       {stop.get('MaxRuntimeInSeconds', '-')} s"
             + (f", max wait {stop['MaxWaitTimeInSeconds']} s (spot)" if "MaxWaitTimeInSeconds" in stop else ""),
             *dry_run_lines(request),
             f"  role          {request['RoleArn']}",
             f"  output        {request['OutputDataConfig']['S3OutputPath']}"]
    for channel in request.get("InputDataConfig", []):
        source = channel["DataSource"].get("S3DataSource")
        fs = channel["DataSource"].get("FileSystemDataSource")
        where = source["S3Uri"] if source else (f"{fs['FileSystemType']} {fs['FileSystemId']}:{fs['DirectoryPath']} "
                                                f"({fs['FileSystemAccessMode']})")
        lines.append(f"  input         {channel['ChannelName']}: {where} ({channel.get('InputMode', 'File')})")
    hyper = request.get("HyperParameters", {})
    # The script's own are listed; SageMaker's sagemaker_* (program, directory, region, ...) only counted.
    shown = [f"{k}={v}" for k, v in sorted(hyper.items()) if not k.startswith("sagemaker_")]
    theirs = len(hyper) - len(shown)
    lines.append(f"  hyperparams   {len(shown)}" + (f" (+ {theirs} sagemaker_* of the toolkit's)" if theirs else "")
                 + (": " + ", ".join(shown) if shown else ""))
    lines.append(f"  code          {upload['uri']} ({upload['bytes']:,} bytes, {len(upload['files'])} files, "
                 f"sha256 {upload['sha256'][:12]})")
    lines.append("The exact request: add -o json (or -o yaml).")
    return mask_text("\n".join(lines))


def local_submitted(request: Any, job: JobInfo) -> dict[str, Any]:
    """`submit --local -o json`: the keys of `submit` (README "JSON output"), for a run that happened here."""
    name = job.name
    return {"job_name": name, "arn": None, "region": job.region, "status": job.status,
            "upload": {"uri": request.source_uri, "sha256": request.bundle.sha256, "bytes": request.bundle.size,
                       "uploaded": False, "git": request.git_summary()},
            "console_url": None, "logs_url": None,
            "commands": {verb: reattach_command(*words) for verb, words in (
                ("status", ("status", name)), ("logs", ("logs", name)), ("wait", ("wait", name)),
                ("stop", ("stop", name)))},
            "job": job.to_dict()}


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _replicas(n: int) -> str:
    return f"{n} replica{'s' if n != 1 else ''}"


def _bundled_lines(plan: Plan) -> list[str]:
    """The bundled entrypoint's batch and learning-rate maths."""
    t = plan.spec.training
    warmup = f", {t.warmup_epochs:g} warm-up epochs" if t.warmup_epochs else ""
    steps = plan.gradient_accumulation_steps
    # A model hook may compile its own optimizer, whose rate the entrypoint keeps as it is.
    hook = (f"                unless model hook {t.model} returns a compiled optimizer: its rate is kept as it is"
            if ":" in t.model else None)
    if steps is None:
        return [f"  batch         {plan.batch_per_replica} per replica -> {plan.global_batch} global",
                f"  learning rate {plan.learning_rate:g} -> {plan.scaled_learning_rate:g} "
                f"({t.lr_scaling} scaling over {_replicas(plan.replicas)}{warmup})", *([hook] if hook else [])]
    return [f"  batch         {plan.batch_per_replica} per replica x {_replicas(plan.replicas)} = {plan.global_batch} "
            f"per micro-batch; x {steps} accumulated steps -> {plan.effective_batch} effective",
            f"  learning rate {plan.learning_rate:g} -> {plan.scaled_learning_rate:g} ({t.lr_scaling} scaling on the "
            f"effective batch, {plan.replicas * steps} x one replica's batch{warmup})", *([hook] if hook else [])]


def _tensorflow_lines(t: dict[str, Any]) -> list[str]:
    """Version, Python, CUDA and where the image comes from: the plan summary's `tensorflow` keys."""
    facts = ", ".join(x for x in (t.get("python"), t.get("cuda") and f"CUDA {t['cuda']}") if x)
    eop = t.get("end_of_patch")
    patched = t.get("patched")
    patches = ("" if patched is None or (patched and not eop) else f"patched until {eop}" if patched else
               f"patches ended {eop}" if eop else "no longer patched")
    if t.get("version_defaulted") and patched and eop:
        patches = f"the default: the newest patched image, until {eop}"
    chosen = f" ({patches})" if patches else ""
    where = {"spec": f"the spec's: {t['image_uri']}", "smtrain table": f"smtrain's table: {t['image_uri'] or '-'}",
             "sdk": f"the SageMaker SDK's table (smtrain's copy): {t['image_uri'] or '-'}"}.get(
                 t.get("image_source", ""), t.get("image_uri") or "-")
    lines = [f"  tensorflow    {t['version'] or '-'}{' ' + facts if facts else ''}{chosen}",
             f"                image: {where}"]
    keras = t.get("keras") or {}
    if keras.get("through") == "tf_keras":
        lines.append(f"                Keras 2 as written: tf_keras under TF_USE_LEGACY_KERAS=1, "
                     f"{keras['requirement']} added to the job's requirements.txt (tensorflow.keras: 2)")
    return lines


def _wrap_fit(plan: Plan, tuning: bool) -> str:
    """How the wrap runs the script's model.fit on this plan's layout (smtrain_tf/wrap/fit_tuning.py)."""
    mended = ("; Keras 3 mended where it fails with several replicas (keras-team/keras#20585, #19246)"
              if plan.strategy == "multi_worker_mirrored" or plan.replicas > 1 else "")
    if not tuning:
        return f"Keras's own fit as your script compiles it (code.wrap_tuning: false){mended}"
    return ("Keras's own fit runs several steps per call (code.wrap_tuning), unless your script sets "
            f"steps_per_execution or a callback acts on every batch{mended}")


def _program_lines(plan: Plan, own_strategies: Sequence[StandIn] = ()) -> list[str]:
    """What runs, and what applies to it: the maths for the bundled entrypoint, the rules for a wrap."""
    if plan.kind == "bundled":
        return _bundled_lines(plan)
    lines = []
    if plan.wrap is not None:
        w = plan.wrap
        lines.append(f"  program       {plan.entry_point} runs your {w.script} unchanged inside the strategy")
        batch = (f"your batch_size x {_replicas(w.batch_factor)} (code.wrap_batch: per_replica)"
                 if w.batch == "per_replica" else "your batch_size as written (code.wrap_batch: global)")
        rate = (f"x {w.lr_factor:g} ({w.lr_scaling} scaling)" if w.lr_scaling
                else "as your script sets it (training.lr_scaling not set)")
        lines.append(f"  wrap          batch: {batch}; learning rate: {rate}")
        lines.append(f"  wrap fit      {_wrap_fit(plan, w.tuning)}")
    else:
        made = f", made from {plan.script}" if plan.script and plan.script != plan.entry_point else ""
        lines.append(f"  program       {plan.entry_point} (your script{made})")
    lines.append("  arguments     exactly hyperparameters: (plus --model_dir, as SageMaker's TensorFlow contract adds it)")
    lines.append(f"  strategy told {plan.strategy_told}")
    lines += [f"  your strategy {o.render()}" for o in own_strategies]
    added = plan.smtrain_environment
    if added:
        lines.append("  environment   " + " ".join(f"{k}={v}" for k, v in added.items()))
    return lines


def plan_text(plan: Plan, more_warnings: Sequence[Problem] = (), own_strategies: Sequence[StandIn] = ()) -> str:
    """`smtrain plan` for people; `more_warnings` (the code bundle's) join the plan's own; `own_strategies`:
    what the wrap gives each strategy a wrapped script builds (smtrain.preflight.scan.stand_ins)."""
    s = plan.summary()
    i = plan.instance
    lines = [
        f"Plan for {plan.spec.name} in {plan.region}",
        f"  instance      {i.name} x {plan.nodes} node(s): {i.gpus} x {i.gpu} "
        f"{gib_text(i.gpu_memory_mib)}{', EFA' if i.efa else ''}",
        f"                {plan.instance_reason}",
        f"  strategy      {plan.strategy} ({plan.strategy_reason})"
        + (f", {plan.processes_per_host} processes per host" if plan.strategy in ("horovod", "smddp") else ""),
        f"  replicas      {plan.replicas}" + ("  per worker (workers step asynchronously)"
                                             if plan.strategy == "parameter_server" else ""),
        *_program_lines(plan, own_strategies),
        *([f"  code          git {plan.git.line()}"] if plan.git else []),
        *_tensorflow_lines(s["tensorflow"]),
        f"  distribution  {json.dumps(plan.distribution) if plan.distribution else 'none (one process per host)'}",
        f"  cost          {_usd(s['cost_usd']['per_hour'])}/h on demand"
        f"{' (estimate)' if plan.cost.price_is_estimate else ''}; at most "
        f"{_usd(s['cost_usd']['max_for_run'])} for max_run {format_duration(plan.spec.compute.max_run)}"
        if plan.cost.per_hour is not None else f"  cost          unknown: the catalog has no price for {i.name}",
    ]
    if plan.cost.spot_per_hour_estimate is not None:
        lines.append(f"                spot estimate {_usd(plan.cost.spot_per_hour_estimate)}/h, at most "
                     f"{_usd(plan.cost.spot_max_estimate)}")
    lines.append(f"                prices: {plan.cost.price_source} ({plan.cost.price_date})")
    if plan.cost.region_note:
        lines.append(f"                {plan.cost.region_note}")
    if plan.cost.price_note:
        lines.append(f"                {i.name} price: {plan.cost.price_note}")
    if plan.cost.unpriced:
        lines.append(f"                not counted: {', '.join(plan.cost.unpriced)}, outside the GPU catalog "
                     "(smtrain knows no price for it)")
    lines += plan_lines(plan)
    lines.append(f"  tensorboard   {_tensorboard_line(plan)}")
    if plan.metric_lines:
        lines.append(f"  metrics       {', '.join(['loss', 'accuracy', *plan.metrics])} (train: and validation: "
                     "MetricDefinitions)")
    else:
        lines.append(f"  metrics       none known: the MetricDefinitions read smtrain's metric line (`epoch=1 step=50 "
                     f"loss=0.23 accuracy=0.91`), which {plan.script} does not print (Keras's `loss: 0.2300` is "
                     "not it); to have them: code.wrap: true, or smtrain_tf.fit, or print `loss=` lines yourself")
    lines.append("Launch on each host (as the SageMaker TensorFlow container does it):")
    for h in plan.launch:
        lines.append(f"  {h.host}")
        if h.ps_tf_config:
            lines.append(f"    ps server  TF_CONFIG={json.dumps(h.ps_tf_config)}")
        if h.tf_config:
            lines.append(f"    TF_CONFIG={json.dumps(h.tf_config)}")
        if h.command:
            lines.append("    " + " ".join(mask_data(h.command)))  # `--password VALUE` among the arguments
        if h.note:
            lines.append(f"    ({h.note})")
    warnings = [*plan.warnings, *more_warnings]
    if warnings:
        lines.append("Warnings:")
        lines += [f"  {w.render()}" for w in warnings]
    return mask_text("\n".join(lines))


def _tensorboard_line(plan: Plan) -> str:
    """Where the event files go: S3 (SageMaker uploads them as the job runs), or only the container."""
    where = plan.tensorboard()
    if where["event_files"]:
        return f"{where['event_files']} (`smtrain tensorboard JOB` shows them)"
    local = "; `submit --local` keeps them in the chief host's output/tensorboard"
    if plan.spec.tensorboard is False:
        return "not kept in S3 (tensorboard: false)" + local
    return f"not kept in S3 (output is not s3://){local}"


def instance_dict(i: InstanceType, price: Price, region: str | None = None) -> dict[str, Any]:
    """One catalog entry for `instances -o json`: None where the catalog marks a fact unknown."""
    cc = i.compute_capability
    return {"type": i.name, "family": i.family, "gpu": i.gpu, "gpus": i.gpus, "gpu_memory_mib": i.gpu_memory_mib,
            "gpu_memory_gb": round(i.gpu_memory / 10**9, 2), "vcpus": i.vcpus,
            "memory_gib": None if i.memory is None else round(i.memory / 2**30, 1), "efa": i.efa,
            "price_per_hour": price.per_hour, "price_region": price.region, "price_note": price.note,
            "price_is_estimate": price.is_estimate, "region_note": price.region_note, "note": i.note,
            "compute_capability": None if cc is None else f"{cc[0]}.{cc[1]}",
            "tensorflow": i.tensorflow_drives, "tensorflow_note": i.tensorflow_note,
            "regions": None if i.regions is None else list(i.regions),
            "offered_in_region": i.offered_in(region)}


def instances_table(instances: list[InstanceType], prices: list[Price], region: str | None, title: str) -> None:
    """The catalog as a table; "?" for an unknown fact, a mark on a price or GPU with a note (and "~" on a
    price that is an estimate), the notes after the table."""
    from rich.table import Table

    marks: dict[str, int] = {}  # note -> its number, one number per distinct note

    def mark(note: str | None) -> str:
        return f" [{marks.setdefault(note, len(marks) + 1)}]" if note else ""

    table = Table(title=title, title_justify="left")
    columns = [("type", "left"), ("gpu", "left"), ("gpus", "right"), ("GiB/gpu", "right"), ("vcpus", "right"),
               ("memory GiB", "right"), ("efa", "center"), ("TF", "center"), ("$/hour", "right")]
    if region:
        columns.append((f"in {region}", "center"))
    for col, just in columns:
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for i, price in zip(instances, prices, strict=True):
        shown = "?" if price.per_hour is None else ("~" if price.is_estimate else "") + f"{price.per_hour:,.3f}"
        row = [i.name + mark(i.note), i.gpu, str(i.gpus), gib_text(i.gpu_memory_mib).removesuffix("GiB"),
               "?" if i.vcpus is None else str(i.vcpus), "?" if i.memory is None else f"{i.memory / 2**30:g}",
               "yes" if i.efa else "",
               # A blank read as "unknown": every row says whether the TensorFlow images drive its GPU.
               {True: "yes", None: "?"}.get(i.tensorflow_drives, "no" + mark(i.tensorflow_note)),
               shown + mark(price.note or price.region_note)]
        if region:
            row.append({True: "yes", None: "?"}.get(i.offered_in(region), "no"))
        table.add_row(*row)
    console = stdout_console(140)
    console.print(table)
    for note, number in marks.items():
        console.print(f"[{number}] {note}", markup=False, highlight=False)


def _when(value: Any) -> str:
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ") if value else "-"


def job_text(job: JobInfo) -> str:
    """`smtrain status` for people: one field a line."""
    if hasattr(job, "tuning"):  # a tuning job (smtrain.sagemaker.tuning_jobs.TuningJobInfo)
        from smtrain.cli.tuning_render import tuning_job_text

        return tuning_job_text(job, _when)
    rows = [("job", job.name), ("status", job.status_text), ("created", _when(job.created)),
            ("started", _when(job.started)), ("ended", _when(job.ended))]
    if job.instance_type:
        rows.append(("instances", f"{job.instance_count or 1} x {job.instance_type}"))
    elif job.extra.get("instance_groups"):
        rows.append(("instances", ", ".join(f"{g['name']}: {g['count']} x {g['instance_type']}"
                                            for g in job.extra["instance_groups"])))
    rows += cost_rows(job)
    if job.failure_reason:
        rows.append(("failure", job.failure_reason))
    if job.model_artifacts:
        rows.append(("model", job.model_artifacts))
    elif job.done and job.extra.get("model_elsewhere"):  # a local job that saved outside SM_MODEL_DIR
        rows.append(("model", f"none in SM_MODEL_DIR: the job saved to {job.extra['model_elsewhere']} instead"))
    elif job.done:
        rows.append(("model", "none: the job saved no model"))
    rows += [(label, value) for label, value in (("console", job.console_url), ("logs", job.logs_url)) if value]
    return mask_text("\n".join(f"{label:<10} {value}" for label, value in rows))


def job_change_line(job: JobInfo) -> str:
    """One line per status change while waiting."""
    now = dt.datetime.now(dt.timezone.utc).strftime("%H:%M:%SZ")
    return f"{now} {job.name}: {job.status_text}"


def jobs_table(jobs: list[JobInfo], *, cost: bool = False) -> None:
    from rich.table import Table

    table = Table(title_justify="left", box=None)
    for col in ("name", "status", "created", "ended", "backend", *(["cost"] if cost else [])):
        table.add_column(col, justify="right" if col == "cost" else "left")
    for j in jobs:
        table.add_row(*mask_data([j.name, j.status_text, _when(j.created), _when(j.ended), j.backend,
                                  *([cost_cell(j)] if cost else [])]))
    stdout_console(160).print(table)


def submitted_text(data: dict[str, Any], confirmed_by_describe: bool) -> str:
    """What `smtrain submit` tells a person: where the code went, the job, how to follow it."""
    up = data["upload"]
    lines = [(f"uploaded {up['uri']} ({up['bytes']:,} bytes)" if up["uploaded"]
              else f"source bundle already in S3, not uploaded again: {up['uri']}")]
    lines.append(f"created training job {data['job_name']} in {data['region']}"
                 + (" (the create call's answer was lost; SageMaker confirms the job exists)"
                    if confirmed_by_describe else ""))
    lines += [f"  {verb:<8}{command}" for verb, command in data["commands"].items()]
    lines.append(f"  {'console':<8}{data['console_url']}")
    return mask_text("\n".join(lines))


def event_files_text(found: EventFiles, command: str | None, *, launching: bool) -> str:
    """`smtrain tensorboard` for people: where the event files are, and how TensorBoard reads them."""
    import shlex

    from smtrain.cli.tensorboard_program import INSTALL_HINT

    count = f"{found.files} TensorBoard event file{'s' if found.files != 1 else ''}"
    lines = [f"{found.job}: {count} in {found.logdir}" if found.source == "local"
             else f"{found.job}: {count} from {found.source}", *([] if found.source == "local" else
                                                                  [f"  downloaded to {found.logdir}"])]
    if command is None:
        lines.append(f"TensorBoard is not installed here: {INSTALL_HINT}, then run "
                     f"tensorboard --logdir {shlex.quote(str(found.logdir))}")
    elif launching:
        lines.append(f"starting TensorBoard (Ctrl-C ends it): {command}")
    else:
        lines.append(f"start TensorBoard with: {command}")
    return mask_text("\n".join(lines))


def no_event_files(found: EventFiles) -> str:
    """The one line for a job whose event files are not there (yet)."""
    where = f"in {found.logdir}" if found.source == "local" else f"under {found.source}"
    return (f"no TensorBoard event files of {found.job} {where} yet: the bundled entrypoint and smtrain_tf.fit "
            "write them after each epoch (a script of your own writes its own into /opt/ml/output/tensorboard)"
            + ("" if found.source == "local" else ", and SageMaker uploads them while the job runs"))


def log_line(event: LogEvent, masker: StreamMasker | None = None) -> str:
    """`[algo-1] message`; a masker kept across the lines of one stream also masks private key blocks
    printed over several lines."""
    message = masker(event.host, event.message) if masker is not None else mask_text(event.message)
    return f"[{event.host}] {message}"
