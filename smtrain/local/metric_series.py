"""A local job's metric series, one point per epoch: its MetricDefinitions applied to a host's log.

SageMaker applies each definition's regex (a Java regular expression) to every line of the job's
output and publishes the first group's value; here the same regexes, with Java's rules
(smtrain.render.java_regex), read the lines of the host's log file, and the same rule as for a
SageMaker job (smtrain.jobs.by_epoch) turns them into epochs, so that a job
shows the same series whichever backend ran it. Every value of a line has that line's time:
the `progress` lines, which match the train:* regexes but not train:epoch's, are left out.

Where the log says more than CloudWatch keeps, the log is shown: CloudWatch takes no NaN or
infinity, but a loss that went nan is what a person reading a local job's metrics needs to see.
So, read locally, a value is any number float() reads, nan and inf included; the bundled
definitions' number class ([0-9.eE+-]+) also takes nan, inf and -inf (what the entrypoint prints
for them), and their train:epoch also a negative epoch. The epoch shown is the epoch logged: a
metric line that starts `epoch=N` (as `smtrain metrics` asks lines to look) gives epoch N even
where the train:epoch regex reads none (a line without ` step=`), rather than a place in order.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from smtrain.jobs import EPOCH, JobInfo, JobMetrics, by_epoch, check_host, left_out
from smtrain.local.supervise import parse_log_line
from smtrain.render import java_regex
from smtrain.terminal_text import as_shown, physical_lines


def definitions_of(record: Mapping[str, Any]) -> list[dict[str, str]]:
    """The job's MetricDefinitions as its record keeps them; those every job has for an older record."""
    kept = record.get("metric_definitions")
    if kept is not None:
        return list(kept)
    from smtrain.plan.declared_metrics import metric_definitions

    return [dict(d) for d in metric_definitions()]


_NUMBER_CLASS = "([0-9.eE+-]+)"  # the bundled definitions' value group (smtrain_tf/metric_definitions.json)
_OR_NOT_FINITE = "((?:[+-]?(?:nan|inf)(?![0-9A-Za-z])|[0-9.eE+-]+))"
_EPOCH_GROUP = "epoch=([0-9]+)"
# A metric line's own epoch, behind mpirun's rank tag or not: `epoch=3 loss=...`.
_LOGGED_EPOCH = re.compile(r"^(?:\[[0-9]+,[0-9]+\]<stdout>:)?epoch=(-?[0-9]{1,15})(?![0-9.])")


def _read_locally(definition: Mapping[str, str]) -> str:
    """The definition's regex as a local job's log is read: its number group takes nan and inf as well."""
    regex = definition["Regex"].replace(_NUMBER_CLASS, _OR_NOT_FINITE)
    return regex.replace(_EPOCH_GROUP, "epoch=(-?[0-9]+)") if definition["Name"] == EPOCH else regex


def _number(text: str) -> float | None:
    """The value a line logs: any number float() reads, nan and inf included (see the module's note)."""
    try:
        return float(text)
    except ValueError:
        return None


def matches(definitions: Sequence[Mapping[str, str]],
            lines: Iterable[tuple[dt.datetime, str]]) -> dict[str, list[tuple[dt.datetime, float]]]:
    """metric name -> (time, value) of every line its regex finds a number in, as SageMaker reads them."""
    raw: dict[str, list[tuple[dt.datetime, float]]] = {}
    for stamp, line in lines:
        limit = java_regex.bound_for(line)
        read: dict[str, float] = {}
        for definition in definitions:
            regex = java_regex.compiled(_read_locally(definition), limit)
            found = regex.search(line) if regex is not None else None
            value = _number(found.group(1)) if found and found.groups() and found.group(1) is not None else None
            if value is not None:
                read[definition["Name"]] = value
        logged = _LOGGED_EPOCH.match(line)
        if read and EPOCH not in read and logged:
            read[EPOCH] = float(logged.group(1))
        for name, value in read.items():
            raw.setdefault(name, []).append((stamp, value))
    return raw


def _lines(log: Path) -> list[tuple[dt.datetime, str]]:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []  # the host has written nothing yet
    # Each line as a terminal shows it: a progress bar's last state, then what was printed after it.
    return [(parsed[0], as_shown(parsed[1])) for parsed in map(parse_log_line, physical_lines(text))
            if parsed is not None]


def read_metrics(record: Mapping[str, Any], job: JobInfo, log_dir: Path, host: str | None = None) -> JobMetrics:
    """The series of `host` (default: the chief, algo-1) from its log in `log_dir`."""
    hosts = tuple(record.get("hosts") or ("algo-1",))
    chosen = check_host(host, hosts)
    definitions = definitions_of(record)
    raw = matches(definitions, _lines(log_dir / f"{chosen}.log"))
    series = by_epoch(raw, [d["Name"] for d in definitions])
    final = {s.name: s.points[-1].value for s in series}
    return JobMetrics(job=job, source="log", host=chosen, hosts=hosts, series=series, final=final,
                      notes=left_out(raw))
