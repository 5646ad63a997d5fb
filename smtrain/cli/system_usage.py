"""`smtrain metrics JOB --system`: each host's CPU, memory, GPU, GPU memory and disk use over the job's run (from
CloudWatch, smtrain.sagemaker.system_metrics; a local job's host processes, smtrain.local.usage_sampler) as a
table, JSON, CSV or a terminal chart; and the utilization line `status` and `wait` end with for a SageMaker job.
Reading them only advises there: a failure is one note, never the command's outcome."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from smtrain.errors import UserError
from smtrain.jobs import GPU, GPU_MEMORY

if TYPE_CHECKING:
    from smtrain.jobs import JobInfo, SystemUsage
    from smtrain.plan.catalog import Catalog

COLUMNS = (("CPUUtilization", "cpu"), ("MemoryUtilization", "memory"), ("GPUUtilization", "gpu"),
           ("GPUMemoryUtilization", "gpu_memory"), ("DiskUtilization", "disk"))


def gpus_per_host(job: JobInfo, catalog: Catalog) -> int | None:
    """Each host's GPUs, from the catalog's figure for the job's one type; None for a cluster or an unknown type."""
    instance = catalog.get(job.instance_type) if job.instance_type else None
    return instance.gpus if instance is not None else None


def read(backend: Any, job: JobInfo, catalog: Catalog) -> SystemUsage:
    """The job's instance metrics: SageMaker's from CloudWatch, a local job's sampled from its host processes."""
    return backend.system(job.name, gpus_per_host(job, catalog) if job.backend == "sagemaker" else None)


def _time(value: dt.datetime) -> str:
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _cell(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.0f}%"


def rows(usage: SystemUsage) -> list[tuple[dt.datetime, str, dict[str, float]]]:
    """(time, host, metric -> percent) in time order, then host order; GPU figures per GPU where the count is known."""
    out = []
    for order, host in enumerate(usage.hosts):
        times = sorted({t for points in host.series.values() for t, _ in points})
        values = {name: dict(points) for name, points in host.series.items()}
        for moment in times:
            row = {}
            for name, _ in COLUMNS:
                value = values.get(name, {}).get(moment)
                if value is not None and name.startswith("GPU") and host.gpus:
                    value /= host.gpus
                if value is not None:
                    row[name] = value
            out.append((moment, f"{order:04d}{host.host}", row))
    return [(t, h[4:], r) for t, h, r in sorted(out, key=lambda item: (item[0], item[1]))]


def table_text(usage: SystemUsage) -> str:
    source = (f"instance metrics from CloudWatch, {usage.period // 60} min apart (GPU figures: the average of each "
              "host's GPUs)" if usage.source == "cloudwatch" else
              f"each host's processes sampled here every {usage.period} s (CPU: % of one core, summed)")
    lines = [f"{usage.job.name} ({usage.job.status}), {source}:",
             f"{'time (UTC)':<20} {'host':<8} " + " ".join(f"{label:>10}" for _, label in COLUMNS)]
    for moment, host, row in rows(usage):
        lines.append(f"{_time(moment):<20} {host:<8} " + " ".join(f"{_cell(row.get(name)):>10}" for name, _ in COLUMNS))
    lines.append("average: " + "; ".join(h.summary_text() for h in usage.hosts if h.series))
    return "\n".join(lines)


def csv_lines(usage: SystemUsage) -> list[str]:
    lines = ["time,host," + ",".join(label for _, label in COLUMNS)]
    for moment, host, row in rows(usage):
        cells = ["" if row.get(name) is None else f"{row[name]:.4g}" for name, _ in COLUMNS]
        lines.append(f"{moment.astimezone(dt.timezone.utc).isoformat().replace('+00:00', 'Z')},{host}," + ",".join(cells))
    return lines


def plot_text(usage: SystemUsage, width: int, height: int, *, color: bool) -> str | None:
    """GPU use per host over the run (each GPU's average), drawn by plotext; None when no host has GPU figures."""
    import plotext

    series = plot_series(usage)
    if not series:
        return None
    start = min(points[0][0] for _, points in series)
    figure = plotext.figure
    figure.clear()
    figure.plot_size(width, height)
    figure.theme("default" if color else "clear")
    figure.title(f"GPU use per host, % of each GPU ({usage.job.name})")
    figure.label("minutes since the first point")
    for host, points in series:
        signal = figure.signal([(t - start).total_seconds() / 60 for t, _ in points], [v for _, v in points])
        signal.label(host)
        signal.lines()
        figure.draw(signal)
    return str(figure.build().string(colorless=not color)).rstrip()


def plot_series(usage: SystemUsage, name: str = GPU) -> list[tuple[str, Sequence[tuple[dt.datetime, float]]]]:
    """(host, points) of one metric for each host that has it, each GPU figure as the average per GPU."""
    out = []
    for host in usage.hosts:
        points = host.series.get(name, ())
        if points:
            scale = host.gpus if name in (GPU, GPU_MEMORY) and host.gpus else 1
            out.append((host.host, [(t, v / scale) for t, v in points]))
    return out


def usage_line(backend: Any, job: JobInfo, catalog: Catalog) -> str | None:
    """The line `status` and `wait` end with for a SageMaker job that started: None when there is nothing to say;
    a failure to read is a note on stderr (it never changes the command's outcome)."""
    if job.backend != "sagemaker" or job.started is None or not hasattr(backend, "system"):
        return None
    try:
        usage = backend.system(job.name, gpus_per_host(job, catalog))
    except UserError as exc:
        click.echo(f"note: no utilization line: {exc}", err=True)
        return None
    line = usage.line()
    return None if line is None else f"utilization  {line}"
