"""Where local jobs live and what is known about them: one directory and one record.json per job.

    ${SMTRAIN_HOME:-~/.smtrain}/local-jobs/<job>/
        record.json        status, times, artifacts, the supervising smtrain process and its children
        hosts/algo-N/      each host's /opt/ml
        logs/algo-N.log    each host's output, one "<UTC ISO time><TAB><line>" per line
        stop-requested     written by `smtrain stop`; the supervisor ends the job when it appears

local-jobs/ (and local-tuning/, whose store is this one) holds own_places.MARKER: no code bundle takes
it in, even when SMTRAIN_HOME lies inside a source dir.

record.json is only ever replaced whole (write, then rename), so a reader never sees half of it.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from smtrain.bundle.own_places import default_home, mark
from smtrain.jobs import JobInfo, LogEvent
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
        return json.loads((self.job_dir(name) / RECORD).read_text(encoding="utf-8"))

    def write(self, name: str, record: dict[str, Any]) -> None:
        path = self.job_dir(name) / RECORD
        tmp = path.with_name(f".{RECORD}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)

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
