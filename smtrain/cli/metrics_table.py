"""How a job's metrics are shown: one row per epoch and one column per metric, as text, JSON or CSV,
and the short summary that ends `submit --wait` and `submit --local`. A script that calls fit several times
has each call's epochs as rows of their own, in order: JSON gives each row its call (`fit`), the table a
line before each call's first epoch, CSV a `fit` column when there is more than one call.

A value that is not a finite number (a loss gone nan or inf in a local job's log) is shown as such: `nan`,
`inf`, `-inf` in text and CSV, and the same words as strings in JSON and YAML, since JSON has no NaN or
infinity (json_value)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from typing import Any

import click

from smtrain.api.metrics import EpochRow, columns, heading, rows, several_fits
from smtrain.jobs import Backend, JobInfo, JobMetrics, reattach_command
from smtrain.redact import mask_text

TIME_FORMAT = "%H:%M:%S"
_NOT_SUMMED = ("train:learning_rate", "train:examples_per_sec")  # the summary's line keeps to what was learnt


def _iso(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z") if value else None


def number(value: float) -> str:
    return f"{value:.6g}"


def _widths(names: list[str]) -> list[int]:
    return [max(len(heading(n)), 8) for n in names]


def header_line(names: list[str]) -> str:
    return "  ".join([f"{'epoch':>5}", f"{'time':<8}", *(f"{heading(n):>{w}}" for n, w in zip(names, _widths(names),
                                                                                              strict=True))])


def fit_line(row: EpochRow) -> str:
    """The line before a fit call's first epoch, when the rows come from several calls."""
    return f"-- fit call {row.fit} --"


def table_lines(found: list[EpochRow], names: list[str]) -> list[str]:
    """The table's rows, with a fit call's line before each call's first epoch when there are several calls."""
    lines: list[str] = []
    calls = several_fits(found)
    for index, row in enumerate(found):
        if calls and (index == 0 or found[index - 1].fit != row.fit):
            lines.append(fit_line(row))
        lines.append(row_line(row, names))
    return lines


def row_line(row: EpochRow, names: list[str]) -> str:
    when = row.timestamp.astimezone(dt.timezone.utc).strftime(TIME_FORMAT) if row.timestamp else "-"
    cells = [f"{number(row.values[n]) if n in row.values else '-':>{w}}" for n, w in zip(names, _widths(names),
                                                                                          strict=True)]
    return "  ".join([f"{row.epoch:>5}", f"{when:<8}", *cells])


def json_value(value: float) -> float | str:
    """A metric value as JSON can hold it: the number, or "nan", "inf" or "-inf" for one that is not finite."""
    return value if math.isfinite(value) else str(value)


def _json_values(values: dict[str, float]) -> dict[str, float | str]:
    return {name: json_value(value) for name, value in values.items()}


def row_dict(row: EpochRow) -> dict[str, Any]:
    """One epoch in JSON: {"fit", "epoch", "timestamp", "values": {name: value}} (README "Metrics"); a value
    that is not finite is the string "nan", "inf" or "-inf"."""
    return {"fit": row.fit, "epoch": row.epoch, "timestamp": _iso(row.timestamp), "values": _json_values(row.values)}


def metrics_dict(metrics: JobMetrics) -> dict[str, Any]:
    """`smtrain metrics -o json` (README "Metrics"); values that are not finite as in row_dict."""
    job = metrics.job
    return {"job": job.name, "backend": job.backend, "status": job.status, "source": metrics.source,
            "host": metrics.host, "hosts": list(metrics.hosts), "metrics": columns(metrics),
            "epochs": [row_dict(r) for r in rows(metrics)], "final": _json_values(dict(metrics.final)),
            "notes": list(metrics.notes)}


def csv_header(names: list[str], calls: bool = False) -> str:
    """`calls`: the rows come from several fit calls, and a `fit` column comes first."""
    return _csv_line([*(["fit"] if calls else []), "epoch", "timestamp", *names])


def csv_row(row: EpochRow, names: list[str], calls: bool = False) -> str:
    return _csv_line([*([str(row.fit)] if calls else []), str(row.epoch), _iso(row.timestamp) or "",
                      *(repr(row.values[n]) if n in row.values else "" for n in names)])


def _csv_line(cells: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(cells)
    return buffer.getvalue()


def no_metrics_text(metrics: JobMetrics) -> str:
    job = metrics.job
    where = "CloudWatch" if metrics.source == "cloudwatch" else f"{metrics.host}'s log"
    later = " yet" if not job.done else ""
    return (f"no metrics of {job.name} ({job.status}) in {where}{later}: they come from the lines its "
            "MetricDefinitions read (`epoch=1 ... loss=0.5 accuracy=0.8`), which the bundled entrypoint and "
            "smtrain_tf.fit print after each epoch" + (" (SageMaker publishes them to CloudWatch within minutes)"
                                                        if metrics.source == "cloudwatch" and not later else ""))


def summary_dict(metrics: JobMetrics) -> dict[str, Any] | None:
    """The end of `submit --wait` / `--local` in JSON: the last epoch and the final values; None if none."""
    last = rows(metrics)[-1:]
    if not last and not metrics.final:
        return None
    return {"host": metrics.host, "epochs": len(rows(metrics)), "last_epoch": row_dict(last[0]) if last else None,
            "final": _json_values(dict(metrics.final))}


def summary_text(metrics: JobMetrics) -> str:
    """Two lines in `status`'s layout: the last epoch's values (else SageMaker's final ones), and the command
    that shows every epoch."""
    last = rows(metrics)[-1:]
    if last:
        row = last[0]
        call = f" of fit call {row.fit}" if row.fit > 1 else ""
        head = f"epoch {row.epoch}{call} ({metrics.host}):"
        values = row.values
    elif metrics.final:
        head, values = "final:", metrics.final
    else:
        return mask_text(f"{'metrics':<10} none (`smtrain metrics {metrics.job.name}` shows them when there are)")
    shown = "  ".join(f"{heading(n)} {number(v)}" for n, v in values.items() if n not in _NOT_SUMMED)
    command = reattach_command("metrics", metrics.job.name,
                               region=metrics.job.region if metrics.source == "cloudwatch" else None)
    return mask_text(f"{'metrics':<10} {head} {shown}\n{'':<10} `{command}` shows every epoch")


def final_summary(backend: Backend, job: JobInfo, output: str) -> dict[str, Any] | None:
    """The summary that ends `submit --wait` / `--local`: printed (text), or returned for the JSON's `metrics` key.

    Reading the metrics never changes the command's outcome: a failure to read them is one note on stderr.
    """
    from smtrain.errors import UserError

    try:
        metrics = backend.metrics(job.name)
    except UserError as exc:
        click.echo(f"note: no metrics summary: {exc}", err=True)
        return None
    if output == "text":
        click.echo(summary_text(metrics))
        return None
    return summary_dict(metrics)

