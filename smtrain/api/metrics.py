"""A job's metrics per epoch: the rows (one per epoch, one column per metric) the CLI's table and the API's
Metrics share, and Metrics itself: rows that `pandas.DataFrame(...)` takes as they are, a table in Jupyter and
a plot of loss and metrics per epoch with matplotlib when it is installed (imported only then)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from smtrain import exit_codes
from smtrain.api.display import grid_table
from smtrain.errors import UserError
from smtrain.jobs import JobMetrics
from smtrain.redact import mask_text


@dataclass(frozen=True)
class EpochRow:
    epoch: int
    timestamp: dt.datetime | None  # the latest of the epoch's points
    values: dict[str, float]  # metric name -> value; a metric the epoch has no value of is absent
    fit: int = 1  # the script's fit call the epoch belongs to (1: the first)


def columns(metrics: JobMetrics) -> list[str]:
    return [s.name for s in metrics.series]


def rows(metrics: JobMetrics) -> list[EpochRow]:
    """One row per epoch of each fit call, in order: the first call's epochs, then the second's, ..."""
    values: dict[tuple[int, int], dict[str, float]] = {}
    stamps: dict[tuple[int, int], dt.datetime] = {}
    for series in metrics.series:
        for point in series.points:
            key = (point.fit, point.epoch)
            values.setdefault(key, {})[series.name] = point.value
            if point.timestamp is not None and (key not in stamps or point.timestamp > stamps[key]):
                stamps[key] = point.timestamp
    return [EpochRow(epoch, stamps.get((fit, epoch)), values[(fit, epoch)], fit) for fit, epoch in sorted(values)]


def several_fits(found: list[EpochRow]) -> bool:
    """Whether the rows come from more than one fit call (their call is then shown)."""
    return any(row.fit > 1 for row in found)


def heading(name: str) -> str:
    """A column's name as Keras logs it (loss, val_accuracy) rather than the metric definition's."""
    prefix, _, rest = name.partition(":")
    return {"train": rest, "validation": f"val_{rest}"}.get(prefix, name) if rest else name


class Metrics(list):  # type: ignore[type-arg]
    """A job's metrics: one dict per epoch, {"epoch": 1, "loss": 0.31, "accuracy": 0.9, "val_loss": ...,
    "time": datetime} ("fit": the call, first, when the script called fit several times); an epoch without a
    value of some metric has None there. `pandas.DataFrame(metrics)`
    takes it as it is. `.job` is the JobInfo read with them, `.host` the host whose log or series they are."""

    def __init__(self, metrics: JobMetrics) -> None:
        names = columns(metrics)
        found = rows(metrics)
        calls = several_fits(found)
        super().__init__({**({"fit": r.fit} if calls else {}), "epoch": r.epoch,
                          **{heading(n): r.values.get(n) for n in names}, "time": r.timestamp} for r in found)
        self.job = metrics.job
        self.host = metrics.host
        self.source = metrics.source
        self.names = [heading(n) for n in names]
        self.final = {heading(k): v for k, v in metrics.final.items()}

    def __repr__(self) -> str:
        return mask_text(f"<Metrics of {self.job.name}: {len(self)} epochs of {', '.join(self.names) or 'no metric'}>")

    def _repr_html_(self) -> str:
        calls = any("fit" in r for r in self)  # several fit calls: each row's call first
        return grid_table([*(["fit"] if calls else []), "epoch", *self.names],
                          ([*([r["fit"]] if calls else []), r["epoch"], *(r[n] for n in self.names)] for r in self),
                          title=f"{self.job.name} ({self.job.status}), {self.host}")

    def plot(self, ax: Any = None) -> Any:
        """Loss, and each other metric, per epoch (validation dashed), with matplotlib: the Axes drawn on
        (a new figure's, else `ax`). UserError when matplotlib is not installed."""
        try:
            import matplotlib.pyplot as plt  # only here: smtrain does not depend on it
        except ImportError:
            raise UserError("plotting needs matplotlib: pip install matplotlib (or `smtrain metrics JOB --plot` "
                            "in a terminal)", exit_codes.USAGE) from None
        if ax is None:
            _, ax = plt.subplots()
        # Several fit calls: each call's epochs after the last call's, in order.
        epochs = list(range(1, len(self) + 1)) if any("fit" in r for r in self) else [r["epoch"] for r in self]
        for name in self.names:
            if name in ("epoch", "learning_rate", "examples_per_sec"):
                continue
            points = [(e, r[name]) for e, r in zip(epochs, self, strict=True) if r[name] is not None]
            if points:
                xs, ys = [e for e, _ in points], [v for _, v in points]
                ax.plot(xs, ys, linestyle="--" if name.startswith("val_") else "-", marker="o", label=name)
        ax.set_xlabel("epoch" if not any("fit" in r for r in self) else "epoch, the fit calls one after another")
        ax.set_title(self.job.name)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
        return ax
