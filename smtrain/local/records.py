"""Where local jobs live and what is known about them: one directory and one record.json per job.

    ${SMTRAIN_HOME:-~/.smtrain}/local-jobs/<job>/
        record.json        status, times, artifacts, the supervising smtrain process and its children
        hosts/algo-N/      each host's /opt/ml
        logs/algo-N.log    each host's output, one "<UTC ISO time><TAB><line>" per line
        stop-requested     written by `smtrain stop`; the supervisor ends the job when it appears

local-jobs/ (and local-tuning/, whose store is this one) holds own_places.MARKER: no code bundle takes
it in, even when SMTRAIN_HOME lies inside a source dir.

record.json is only ever replaced whole (write, then rename), so a reader never sees half of it; a write that
fails (a full disk) leaves the old record and no temporary file. A record is checked when read (types, dates,
the status), as a spec is: one that is damaged is RecordUnreadable, naming the file and the cause, and
`list` shows that job as unreadable rather than hiding it or failing.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from smtrain import exit_codes
from smtrain.bundle.own_places import default_home, mark
from smtrain.errors import UserError
from smtrain.jobs import JOB_STATUSES, JobInfo, LogEvent
from smtrain.local.supervise import parse_log_line
from smtrain.terminal_text import as_shown, physical_lines

RECORD = "record.json"
STOP_FILE = "stop-requested"


def iso(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z") if value else None


def from_iso(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def process_start(pid: int) -> int | None:
    """The start time of process `pid` in clock ticks (Linux), to tell it from a later one with its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its closing one.
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


def alive(pid: int | None, start: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return start is None or process_start(pid) in (None, start)


class RecordUnreadable(UserError):
    """A job's record.json that cannot be read or is not a record (damaged, truncated, edited by hand)."""

    def __init__(self, path: Path, cause: str) -> None:
        super().__init__(f"local job {path.parent.name}: its record {path} cannot be read: {cause}", exit_codes.USAGE)
        self.cause = cause


# The record's fields that are read back, and their types (None is always allowed but for name and status).
_TEXT = ("secondary_status", "failure_reason", "model_artifacts", "instance_type", "region", "log_dir", "job_dir",
         "artifacts_dir", "output_artifacts", "failed_host", "strategy")
_DATES = ("created", "started", "ended")


def record_problem(record: Any) -> str | None:
    """What makes `record` no job record, or None."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    if not isinstance(record.get("name"), str) or not record["name"]:
        return "no job name"
    if record.get("status") not in JOB_STATUSES:
        return f"status {record.get('status')!r} is none of {', '.join(JOB_STATUSES)}"
    for key in _TEXT:
        if record.get(key) is not None and not isinstance(record[key], str):
            return f"{key} is a {type(record[key]).__name__}, not text"
    for key in _DATES:
        value = record.get(key)
        if value is None:
            continue
        try:
            when = from_iso(value) if isinstance(value, str) else None
        except ValueError:
            when = None
        if when is None or when.tzinfo is None:
            return f"{key} {value!r} is not a UTC time (2026-11-28T07:00:00Z)"
    for key in ("instance_count", "exit_code", "max_run_seconds"):
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            return f"{key} is a {type(value).__name__}, not a whole number"
    hosts = record.get("hosts")
    if hosts is not None and (not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts)):
        return "hosts is not a list of host names"
    processes = record.get("processes")
    if processes is not None and (not isinstance(processes, list) or not all(isinstance(p, dict) for p in processes)):
        return "processes is not a list of processes"
    if record.get("supervisor") is not None and not isinstance(record["supervisor"], dict):
        return "supervisor is not an object"
    return None


class JobStore:
    def __init__(self, home: Path | None = None) -> None:
        self.root = (home or default_home()) / "local-jobs"

    def job_dir(self, name: str) -> Path:
        return self.root / name

    def has(self, name: str) -> bool:
        return bool(name) and "/" not in name and (self.job_dir(name) / RECORD).is_file()

    def create(self, name: str) -> Path:
        """A new, empty job directory; FileExistsError if the name is taken."""
        self.root.mkdir(parents=True, exist_ok=True)
        mark(self.root)  # records made before the marker existed get it with the next job
        path = self.job_dir(name)
        path.mkdir()
        return path

    def read(self, name: str) -> dict[str, Any]:
        """The job's record, checked as the spec is; RecordUnreadable (exit 2) naming the file and the cause."""
        path = self.job_dir(name) / RECORD
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise RecordUnreadable(path, exc.strerror or str(exc)) from None
        except ValueError as exc:  # not JSON, or not UTF-8
            raise RecordUnreadable(path, f"not JSON ({exc})") from None
        problem = self.problem(record)
        if problem:
            raise RecordUnreadable(path, problem)
        return record

    @staticmethod
    def problem(record: Any) -> str | None:
        """What makes `record` none of this store's records, or None."""
        return record_problem(record)

    def write(self, name: str, record: dict[str, Any]) -> None:
        path = self.job_dir(name) / RECORD
        tmp = path.with_name(f".{RECORD}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, path)
        except BaseException:  # a full disk: the record stays as it was, and no temporary file is left
            tmp.unlink(missing_ok=True)
            raise

    def update(self, name: str, **changes: Any) -> dict[str, Any]:
        record = self.read(name)
        record.update(changes)
        self.write(name, record)
        return record

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / RECORD).is_file())

    def stop_requested(self, name: str) -> bool:
        return (self.job_dir(name) / STOP_FILE).exists()

    def request_stop(self, name: str) -> None:
        (self.job_dir(name) / STOP_FILE).touch()

    def log_dir(self, name: str) -> Path:
        return self.job_dir(name) / "logs"

    def hosts_dir(self, name: str) -> Path:
        """hosts/: one directory per host, each that host's /opt/ml."""
        return self.job_dir(name) / "hosts"


def job_info(record: dict[str, Any]) -> JobInfo:
    logs = record.get("log_dir")
    return JobInfo(
        name=record["name"], backend="local", status=record["status"],
        secondary_status=record.get("secondary_status"), created=from_iso(record.get("created")),
        started=from_iso(record.get("started")), ended=from_iso(record.get("ended")),
        instance_type=record.get("instance_type"), instance_count=record.get("instance_count"),
        failure_reason=record.get("failure_reason"), model_artifacts=record.get("model_artifacts"),
        console_url=None, logs_url=Path(logs).as_uri() if logs else None, region=record.get("region"),
        extra={k: record.get(k) for k in ("job_dir", "output_artifacts", "exit_code", "failed_host", "strategy",
                                            "model_elsewhere")},
    )


def unreadable_info(name: str, cause: str) -> JobInfo:
    """A job `list` shows whose record cannot be read: its name, and why, as its reason."""
    return JobInfo(name=name, backend="local", status="Unknown", secondary_status="record unreadable", created=None,
                   started=None, ended=None, instance_type=None, instance_count=None,
                   failure_reason=f"record unreadable: {cause}", model_artifacts=None, console_url=None, logs_url=None,
                   region=None, extra={})


def _events(path: Path, offset: int = 0) -> tuple[list[LogEvent], int]:
    """Complete lines of a host's log from byte `offset`, and the offset after the last of them."""
    host = path.stem
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return [], offset
    end = data.rfind(b"\n") + 1  # a line still being written waits for the next read
    events = []
    for raw in physical_lines(data[:end].decode("utf-8", errors="replace")):
        parsed = parse_log_line(raw)
        if parsed is not None:
            events.append(LogEvent(host=host, timestamp=parsed[0], message=as_shown(parsed[1])))
    return events, offset + end


def read_logs(log_dir: Path, offsets: dict[str, int] | None = None) -> list[LogEvent]:
    """Every host's new lines, merged by time (each file is already in time order)."""
    offsets = offsets if offsets is not None else {}
    streams = []
    for path in sorted(log_dir.glob("*.log")) if log_dir.is_dir() else []:
        events, offsets[path.name] = _events(path, offsets.get(path.name, 0))
        streams.append(events)
    return list(heapq.merge(*streams, key=lambda e: e.timestamp))


def follow_logs(log_dir: Path, finished: Callable[[], bool], sleep: Callable[[float], None],
                interval: float) -> Iterator[LogEvent]:
    """Lines as they arrive until `finished()` says the job has ended, then what is left."""
    offsets: dict[str, int] = {}
    while True:
        done = finished()
        yield from read_logs(log_dir, offsets)
        if done:
            return
        sleep(interval)
