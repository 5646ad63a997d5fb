"""A local job's host processes sampled with `ps` (smtrain.local.usage_sampler): each host's tree summed, samples
read back past a line cut short, and a `ps` that fails ends the sampling, never the job."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from smtrain.jobs import JobInfo
from smtrain.local import usage_sampler
from smtrain.local.usage_sampler import UsageSampler, host_figures, read_usage


def test_each_host_sums_its_whole_process_tree_and_nothing_else():
    table = {10: (1, 50.0, 1000), 11: (10, 25.0, 500), 12: (11, 5.0, 100), 20: (1, 80.0, 2000), 30: (1, 99.0, 9)}
    assert host_figures({"algo-1": 10, "algo-2": 20, "algo-3": 99}, table) == {
        "algo-1": (80.0, 1600 * 1024), "algo-2": (80.0, 2000 * 1024)}  # algo-3's process is gone: no figure


def test_real_processes_are_sampled_into_the_file(tmp_path: Path):
    child = subprocess.Popen([sys.executable, "-c", "import time; [sum(range(10**5)) for _ in range(10**9)]"])
    try:
        sampler = UsageSampler(tmp_path / "usage.jsonl", interval=0.1)
        sampler.start({"algo-1": child.pid, "algo-2": os.getpid()})
        deadline = time.monotonic() + 60  # until three samples of each host, however loaded the machine
        while time.monotonic() < deadline and (not (tmp_path / "usage.jsonl").exists()
                                               or len((tmp_path / "usage.jsonl").read_text().splitlines()) < 6):
            time.sleep(0.1)
        sampler.stop()
    finally:
        child.kill()
        child.wait()
    usage = read_usage(tmp_path / "usage.jsonl", JobInfo(name="j", backend="local", status="Completed"),
                       ("algo-1", "algo-2"))
    busy = next(h for h in usage.hosts if h.host == "algo-1")
    assert len(busy.series["CPUUtilization"]) >= 3 and (busy.average("CPUUtilization") or 0) > 5, busy
    assert usage.period == 1 and usage.notes == ()


def test_a_line_cut_short_is_skipped(tmp_path: Path):
    path = tmp_path / "usage.jsonl"
    path.write_text('{"time": "2026-11-28T10:00:00Z", "host": "algo-1", "interval": 5, "cpu": 90.0, "memory": 3.5}\n'
                    '{"time": "2026-11-28T10:00:05Z", "host": "algo-1", "cpu": 9')
    usage = read_usage(path, JobInfo(name="j", backend="local", status="Stopped"), ("algo-1",))
    assert usage.hosts[0].series["CPUUtilization"][0][1] == 90.0 and len(usage.hosts[0].series["CPUUtilization"]) == 1
    assert usage.period == 5


def test_a_ps_that_fails_ends_the_sampling_quietly(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(usage_sampler, "_PS", ("false",))
    sampler = UsageSampler(tmp_path / "usage.jsonl", interval=0.05)
    sampler.start({"algo-1": os.getpid()})
    assert sampler._thread is not None
    sampler._thread.join(timeout=30)  # it ends by itself at the first failed `ps`
    assert not sampler._thread.is_alive()
    sampler.stop()
    assert not (tmp_path / "usage.jsonl").exists()
