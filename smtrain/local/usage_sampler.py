"""Each local host's CPU and memory while its processes run, for `smtrain metrics JOB --system` on a local job.

A local host is a process (and the processes it starts: the entry point under the toolkit's runner, mpirun's
ranks). Every SMTRAIN_USAGE_SECONDS (default 5) `ps` lists every process's parent, CPU and resident memory (POSIX
`ps -A -o pid=,ppid=,pcpu=,rss=`: the same on Linux and macOS), and each host's figures are summed over its
process tree: CPUUtilization as SageMaker counts it (percent of one core, summed over cores), MemoryUtilization
as a percent of this machine's memory. One JSON line per host and sample is appended to the job's usage.jsonl.
Under MPI one mpirun starts every rank, so the ranks count for the host that runs it.

Sampling only advises: a `ps` that fails or is missing ends the sampling, never the job.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path

from smtrain.jobs import HostUsage, JobInfo, SystemUsage, seconds_from_env

USAGE_FILE = "usage.jsonl"
INTERVAL_ENV = "SMTRAIN_USAGE_SECONDS"
DEFAULT_INTERVAL = 5.0
_PS = ("ps", "-A", "-o", "pid=,ppid=,pcpu=,rss=")
_PS_TIMEOUT = 10.0


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return None


def _processes() -> dict[int, tuple[int, float, int]] | None:
    """pid -> (parent, percent CPU, resident KiB) of every process; None when `ps` cannot tell."""
    try:
        done = subprocess.run(_PS, capture_output=True, text=True, timeout=_PS_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    table = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        try:
            table[int(parts[0])] = (int(parts[1]), float(parts[2]), int(parts[3]))
        except ValueError:
            continue
    return table


def host_figures(roots: Mapping[str, int], table: Mapping[int, tuple[int, float, int]]) -> dict[str, tuple[float, int]]:
    """host -> (percent CPU, resident bytes) summed over the process tree of each host's root process."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    out = {}
    for host, root in roots.items():
        cpu, rss, todo, seen = 0.0, 0, [root], set()
        while todo:
            pid = todo.pop()
            if pid in seen or pid not in table:
                continue
            seen.add(pid)
            cpu += table[pid][1]
            rss += table[pid][2] * 1024
            todo += children.get(pid, [])
        if seen:
            out[host] = (cpu, rss)
    return out


class UsageSampler:
    """Samples the hosts' process trees in a thread of its own, from start() to stop()."""

    def __init__(self, path: Path, interval: float | None = None) -> None:
        self.path = path
        self.interval = interval if interval is not None else seconds_from_env(INTERVAL_ENV, DEFAULT_INTERVAL)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._memory = _memory_bytes()

    def start(self, roots: Mapping[str, int]) -> None:
        self._thread = threading.Thread(target=self._run, args=(dict(roots),), daemon=True, name="smtrain-usage")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=_PS_TIMEOUT + 1)

    def _run(self, roots: dict[str, int]) -> None:
        while not self._stop.is_set():
            table = _processes()
            if table is None:
                return
            now = dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")
            lines = [json.dumps({"time": now, "host": host, "interval": self.interval, "cpu": round(cpu, 1),
                                 "memory_bytes": rss,
                                 "memory": None if not self._memory else round(100 * rss / self._memory, 2)})
                     for host, (cpu, rss) in host_figures(roots, table).items()]
            try:
                with open(self.path, "a", encoding="utf-8") as out:
                    out.write("".join(line + "\n" for line in lines))
            except OSError:
                return  # a full disk ends the sampling, not the job
            self._stop.wait(self.interval)


def read_usage(path: Path, job: JobInfo, hosts: tuple[str, ...]) -> SystemUsage:
    """The samples of a local job as SageMaker's figures are shown: per host, CPUUtilization and MemoryUtilization."""
    series: dict[str, dict[str, list[tuple[dt.datetime, float]]]] = {h: {} for h in hosts}
    interval = DEFAULT_INTERVAL
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        text = ""
    for line in text.splitlines():
        try:
            sample = json.loads(line)
            when = dt.datetime.fromisoformat(sample["time"].replace("Z", "+00:00"))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line cut short by a kill: the rest still reads
        if isinstance(sample.get("interval"), (int, float)) and sample["interval"] > 0:
            interval = float(sample["interval"])
        host = series.setdefault(str(sample.get("host")), {})
        for name, key in (("CPUUtilization", "cpu"), ("MemoryUtilization", "memory")):
            if isinstance(sample.get(key), (int, float)):
                host.setdefault(name, []).append((when, float(sample[key])))
    usage = tuple(HostUsage(host, None, {name: tuple(points) for name, points in named.items()})
                  for host, named in series.items())
    notes = () if any(h.series for h in usage) else (
        f"no CPU or memory samples for {job.name}: smtrain samples a local job's host processes while it runs "
        f"(every {INTERVAL_ENV} seconds, default {DEFAULT_INTERVAL:g})",)
    return SystemUsage(job, "processes", max(1, round(interval)), usage, notes)
