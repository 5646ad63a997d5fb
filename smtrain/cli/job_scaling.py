"""How a job's examples/s scaled against one replica: `metrics` ends with "4 replicas: 3.1x one replica, 78%
efficiency", so a user sees when more GPUs stopped paying.

A job's replicas are what its chief said as it started (`strategy=K replicas=N workers=M`: the config line of the
bundled entrypoint and smtrain_tf.fit, the wrap's strategy line), read from its log. The one-replica figure is the
newest other job of the same spec name (smtrain names jobs NAME-yyyymmdd-HHMMSS-xxxx) whose chief said
replicas=1 and whose epochs carry examples/s: an earlier run of the same spec on one GPU (`--set compute.nodes=1`
and a one-GPU type, or a local run of one host). A job's figure is the median examples/s of its epochs after the
first (the first also traces and compiles the step); of its one epoch when it has one.

Advisory: no figure (a job of one replica, no earlier one-replica job, a log that cannot be read) is no line.
For a SageMaker job this reads the logs of the job and of up to CANDIDATES earlier ones from CloudWatch Logs.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Any

from smtrain.errors import UserError
from smtrain.jobs import Backend, JobMetrics

RATE = "train:examples_per_sec"
CANDIDATES = 5  # the newest jobs of the same name looked at for a one-replica figure
_SAID = re.compile(r"\bstrategy=(\S+) replicas=(\d+) workers=(\d+)")
_NAMED = re.compile(r"^(?P<spec>.+)-\d{8}-\d{6}-[0-9a-f]{4}$")


@dataclass(frozen=True)
class Scaling:
    replicas: int
    examples_per_sec: float
    baseline_job: str
    baseline_examples_per_sec: float

    @property
    def speedup(self) -> float:
        return self.examples_per_sec / self.baseline_examples_per_sec

    @property
    def efficiency(self) -> float:
        return self.speedup / self.replicas

    def line(self) -> str:
        return (f"{self.replicas} replicas: {self.speedup:.1f}x one replica ({self.baseline_job}: "
                f"{self.baseline_examples_per_sec:.0f} examples/s), {self.efficiency:.0%} efficiency")

    def to_dict(self) -> dict[str, Any]:
        return {"replicas": self.replicas, "examples_per_sec": self.examples_per_sec,
                "baseline_job": self.baseline_job, "baseline_examples_per_sec": self.baseline_examples_per_sec,
                "speedup": round(self.speedup, 3), "efficiency": round(self.efficiency, 3)}


def examples_per_sec(metrics: JobMetrics) -> float | None:
    """The median examples/s of the first fit call's epochs after the first (its only one when it has one)."""
    series = next((s for s in metrics.series if s.name == RATE), None)
    values = [p.value for p in sorted(series.points, key=lambda p: p.epoch) if p.fit == 1] if series else []
    values = values[1:] if len(values) > 1 else values
    return statistics.median(values) if values and statistics.median(values) > 0 else None


def replicas_of(backend: Backend, name: str) -> int | None:
    """The replicas the job's chief (algo-1) said it trains on; None when its log does not say."""
    for event in backend.logs(name, follow=False):
        found = _SAID.search(event.message) if event.host == "algo-1" else None
        if found:
            return int(found.group(2))
    return None


def _spec_of(job_name: str) -> str | None:
    """The spec name of a job smtrain named (NAME-yyyymmdd-HHMMSS-xxxx); None for a name of another shape."""
    named = _NAMED.match(job_name)
    return named.group("spec") if named else None


def scaling(backend: Backend, metrics: JobMetrics) -> Scaling | None:
    """How `metrics`'s job scaled against the newest earlier one-replica job of its spec; None when unknown."""
    job = metrics.job
    spec, rate = _spec_of(job.name), examples_per_sec(metrics)
    if spec is None or rate is None:
        return None
    try:
        replicas = replicas_of(backend, job.name)
        if replicas is None or replicas < 2:
            return None
        earlier = [j.name for j in backend.list(status=None, name_contains=spec + "-", since=None, limit=50)
                   if j.name != job.name and _spec_of(j.name) == spec]
        for other in sorted(earlier, reverse=True)[:CANDIDATES]:  # newest first: the time is in the name
            if replicas_of(backend, other) != 1:
                continue
            base = examples_per_sec(backend.metrics(other))
            if base is not None:
                return Scaling(replicas, rate, other, base)
    except UserError:
        return None  # advisory: a log or a job that cannot be read is no line
    return None
