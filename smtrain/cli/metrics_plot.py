"""`smtrain metrics --plot`: loss and accuracy per epoch as line charts in the terminal, drawn by plotext.

plotext (MIT, no Python dependencies) is imported here only, and this module only under --plot.
Train and validation are told apart by their markers as well as by colour, so a chart printed
without colour (a pipe, NO_COLOR) still reads.

A point that is not a finite number (a loss that went nan or inf) has no place on an axis: it is left
out of its chart, and a line under the charts names each one. Huge finite values still plot: a chart
whose values span more than a float holds (1e308 and -1e308) is drawn in units of a power of ten,
which its title gives.
"""

from __future__ import annotations

import math

from smtrain.jobs import JobMetrics, MetricPoint, MetricSeries

MARKERS = {"train": "•", "validation": "x"}
_NOT_PLOTTED = ("loss", "epoch", "learning_rate", "examples_per_sec")


def panels(metrics: JobMetrics) -> list[tuple[str, list[MetricSeries]]]:
    """(title, its series) for the loss chart and the accuracy chart; a model without accuracy gets the chart
    of its first other metric (mae, ...) instead."""
    by_name = {s.name: s for s in metrics.series}
    others = [s.name.partition(":")[2] for s in metrics.series
              if s.name.startswith("train:") and s.name.partition(":")[2] not in _NOT_PLOTTED]
    titles = ["loss", "accuracy" if "accuracy" in others else (others[0] if others else None)]
    found = []
    for title in titles:
        if title is None:
            continue
        series = [by_name[f"{side}:{title}"] for side in MARKERS if f"{side}:{title}" in by_name]
        if series:
            found.append((title, series))
    return found


def _finite(series: MetricSeries) -> list[MetricPoint]:
    return [p for p in series.points if math.isfinite(p.value)]


def _unit(values: list[float]) -> float:
    """1, or the power of ten to draw `values` in when their span overflows a float (plotext's axis would be nan)."""
    if not values or math.isfinite(max(values) - min(values)):
        return 1.0
    return 10.0 ** math.floor(math.log10(max(abs(v) for v in values)))


def left_out_text(metrics: JobMetrics) -> str | None:
    """The line that names the points a chart leaves out (not finite), or None."""
    plotted = [one for _, series in panels(metrics) for one in series]
    missing = [f"{one.name} epoch {p.epoch} ({p.value})" for one in plotted for p in one.points
               if not math.isfinite(p.value)]
    if not missing:
        return None
    shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    return f"not plotted (not a finite number): {shown}"


def plot_text(metrics: JobMetrics, width: int, height: int, *, color: bool) -> str | None:
    """The charts side by side in `width` x `height` terminal cells, then the line naming the points left out (not
    finite) if any: only that line when no point is finite; None when there is no series to draw."""
    import plotext

    shown = [(title, [one for one in series if _finite(one)]) for title, series in panels(metrics)]
    shown = [(title, series) for title, series in shown if series]
    note = left_out_text(metrics)
    if not shown:
        return note  # every point not finite: the line that says so is all there is to show
    figure = plotext.figure
    figure.clear()
    figure.plot_size(width, height)
    figure.theme("default" if color else "clear")
    if len(shown) > 1:
        figure.subplots(1, len(shown))  # plotext's grid of one is no panel at all: one chart is the figure
    for column, (title, series) in enumerate(shown, start=1):
        panel = figure.subplot(1, column) if len(shown) > 1 else figure
        unit = _unit([p.value for one in series for p in _finite(one)])
        in_units = f", x{unit:.0e}" if unit != 1 else ""
        panel.title(f"{title} per epoch ({metrics.host}{in_units})")
        keys = sorted({(p.fit, p.epoch) for one in series for p in _finite(one)})
        calls = any(fit > 1 for fit, _ in keys)
        # One call: the epochs themselves on the axis. Several (fit called again): each call's epochs after the
        # last call's, labelled call.epoch.
        x_of = {key: (index if calls else key[1]) for index, key in enumerate(keys, start=1)}
        panel.label("fit call.epoch" if calls else "epoch")
        for one in series:
            side = one.name.partition(":")[0]
            points = _finite(one)
            signal = panel.signal([x_of[(p.fit, p.epoch)] for p in points], [p.value / unit for p in points],
                                  marker=MARKERS[side])
            signal.label(side)
            signal.lines()
            panel.draw(signal)
        epochs = [x_of[key] for key in keys]
        labels = [f"{fit}.{epoch}" if calls else str(epoch) for fit, epoch in keys]
        step = max(1, -(-len(epochs) // 8))  # whole epochs on the axis, at most about eight
        panel.ruler("x").ticks(epochs[::step], labels[::step])
        # The legend in the corner the curves leave free: top right when they fall (loss), else bottom right.
        values = [p.value / unit for one in series for p in _finite(one)]
        first = _finite(series[0])
        falling = first[-1].value <= first[0].value
        panel.legend(x=epochs[-1], y=max(values) if falling else min(values), ha="right",
                     va="top" if falling else "bottom", relative=True)
    chart = str(figure.build().string(colorless=not color)).rstrip()
    return chart if note is None else f"{chart}\n{note}"
