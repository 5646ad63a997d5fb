"""How results are shown: text for people, JSON/YAML with stable keys for pipelines."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Iterable
from typing import Any

import click

from smtrain.jobs import JobInfo, LogEvent
from smtrain.plan.build import Plan
from smtrain.plan.catalog import InstanceType
from smtrain.redact import redact
from smtrain.spec.problems import Problem
from smtrain.spec.units import format_duration


def problem_dict(p: Problem) -> dict[str, Any]:
    loc = p.location
    return {"file": loc.source if loc else None, "line": loc.line if loc else None,
            "column": loc.column if loc else None, "field": ".".join(map(str, p.path)), "message": p.message}


def echo_problems(problems: Iterable[Problem], *, label: str = "error") -> None:
    for p in problems:
        click.echo(f"{label}: {p.render()}", err=True)


def dump(data: Any, fmt: str) -> None:
    """JSON or YAML on stdout (known secret values masked)."""
    if fmt == "yaml":
        import yaml  # already loaded by the spec reader; local to keep this module's surface small

        click.echo(redact(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120)), nl=False)
    else:
        click.echo(redact(json.dumps(data, indent=2, sort_keys=False, default=str)))


def dump_line(data: Any) -> None:
    """One compact JSON document on one line (JSON Lines), for streams such as logs."""
    click.echo(redact(json.dumps(data, separators=(",", ":"), default=str)))


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def plan_text(plan: Plan) -> str:
    s = plan.summary()
    i = plan.instance
    lines = [
        f"Plan for {plan.spec.name} in {plan.region}",
        f"  instance      {i.name} x {plan.nodes} node(s): {i.gpus} x {i.gpu} "
        f"{i.gpu_memory / 10**9:g}GB{', EFA' if i.efa else ''}",
        f"                {plan.instance_reason}",
        f"  strategy      {plan.strategy} ({plan.strategy_reason})"
        + (f", {plan.processes_per_host} processes per host" if plan.strategy in ("horovod", "smddp") else ""),
        f"  replicas      {plan.replicas}" + ("  per worker (workers step asynchronously)"
                                             if plan.strategy == "parameter_server" else ""),
        f"  batch         {plan.batch_per_replica} per replica -> {plan.global_batch} global",
        f"  learning rate {plan.learning_rate:g} -> {plan.scaled_learning_rate:g} "
        f"({plan.spec.training.lr_scaling} scaling over {plan.replicas} replicas"
        + (f", {plan.spec.training.warmup_epochs:g} warm-up epochs)" if plan.spec.training.warmup_epochs else ")"),
        f"  tensorflow    {plan.framework_version or '-'} {plan.py_version or ''}"
        + (f"  image {plan.image_uri}" if plan.image_uri else ""),
        f"  distribution  {json.dumps(plan.distribution) if plan.distribution else 'none (SDK default)'}",
        f"  cost          {_usd(s['cost_usd']['per_hour'])}/h on demand; at most "
        f"{_usd(s['cost_usd']['max_for_run'])} for max_run {format_duration(plan.spec.compute.max_run)}",
    ]
    if plan.cost.spot_per_hour_estimate is not None:
        lines.append(f"                spot estimate {_usd(plan.cost.spot_per_hour_estimate)}/h, at most "
                     f"{_usd(plan.cost.spot_max_estimate)}")
    lines.append(f"                prices: {plan.cost.price_source} ({plan.cost.price_date})")
    lines.append("Launch on each host (as the SageMaker TensorFlow container does it):")
    for h in plan.launch:
        lines.append(f"  {h.host}")
        if h.ps_tf_config:
            lines.append(f"    ps server  TF_CONFIG={json.dumps(h.ps_tf_config)}")
        if h.tf_config:
            lines.append(f"    TF_CONFIG={json.dumps(h.tf_config)}")
        if h.command:
            lines.append("    " + " ".join(h.command))
        if h.note:
            lines.append(f"    ({h.note})")
    if plan.warnings:
        lines.append("Warnings:")
        lines += [f"  {w.render()}" for w in plan.warnings]
    return "\n".join(lines)


def instance_dict(i: InstanceType) -> dict[str, Any]:
    return {"type": i.name, "family": i.family, "gpu": i.gpu, "gpus": i.gpus, "gpu_memory_gb": i.gpu_memory / 10**9,
            "vcpus": i.vcpus, "memory_gib": round(i.memory / 2**30, 1), "efa": i.efa,
            "price_per_hour": i.price_per_hour}


def instances_table(instances: list[InstanceType], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col, just in (("type", "left"), ("gpu", "left"), ("gpus", "right"), ("GB/gpu", "right"),
                      ("vcpus", "right"), ("memory GiB", "right"), ("efa", "center"), ("$/hour", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for i in instances:
        table.add_row(i.name, i.gpu, str(i.gpus), f"{i.gpu_memory / 10**9:g}", str(i.vcpus),
                      f"{i.memory / 2**30:g}", "yes" if i.efa else "", f"{i.price_per_hour:,.3f}")
    Console(file=sys.stdout, width=120 if not sys.stdout.isatty() else None).print(table)


def _status(job: JobInfo) -> str:
    second = job.secondary_status
    return job.status + (f" ({second})" if second and second != job.status else "")


def _when(value: Any) -> str:
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ") if value else "-"


def job_text(job: JobInfo) -> str:
    """`smtrain status` for people: one field a line."""
    rows = [("job", job.name), ("status", _status(job)), ("created", _when(job.created)),
            ("started", _when(job.started)), ("ended", _when(job.ended))]
    if job.instance_type:
        rows.append(("instances", f"{job.instance_count or 1} x {job.instance_type}"))
    if job.failure_reason:
        rows.append(("failure", job.failure_reason))
    if job.model_artifacts and job.status == "Completed":
        rows.append(("model", job.model_artifacts))
    rows += [(label, value) for label, value in (("console", job.console_url), ("logs", job.logs_url)) if value]
    return "\n".join(f"{label:<10} {value}" for label, value in rows)


def job_change_line(job: JobInfo) -> str:
    """One line per status change while waiting."""
    now = dt.datetime.now(dt.timezone.utc).strftime("%H:%M:%SZ")
    return f"{now} {job.name}: {_status(job)}"


def jobs_table(jobs: list[JobInfo]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title_justify="left", box=None)
    for col in ("name", "status", "created", "ended", "backend"):
        table.add_column(col)
    for j in jobs:
        table.add_row(j.name, _status(j), _when(j.created), _when(j.ended), j.backend)
    Console(file=sys.stdout, width=160 if not sys.stdout.isatty() else None).print(table)


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
    return redact("\n".join(lines))


def log_line(event: LogEvent) -> str:
    return redact(f"[{event.host}] {event.message}")
