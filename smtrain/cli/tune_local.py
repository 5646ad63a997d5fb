"""`smtrain tune SPEC --local`: the trials run here (smtrain.local.tuning), a line as each ends, then
the table of trials with the best marked, its values, and the commands to look at it.

Text goes to stdout; with -o json/yaml the lines go to stderr and stdout holds one document (the keys
of LocalTuning.to_dict(), README "Tuning here"). Exit 0 when some trial gave the objective, 1 when none
did, 130 on Ctrl-C (the running trial stopped, the tuning recorded as Stopped).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from smtrain import exit_codes
from smtrain.redact import mask_text

if TYPE_CHECKING:
    from smtrain.local.tuning import LocalTuning, Trial
    from smtrain.plan.catalog import Catalog

BEST_MARK = "*"
REASON_SHOWN = 200  # characters of a failed trial's reason on its line (`smtrain status TRIAL` has it all)


def _value(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _values_text(trial: Trial) -> str:
    from smtrain.spec.tuning import range_name

    return " ".join(f"{range_name(k)}={_value(v)}" for k, v in trial.values.items())


def trials_table(tuning: LocalTuning) -> list[str]:
    """One row per trial: its name, each tuned value, the objective, status and seconds; the best marked."""
    from smtrain.spec.tuning import range_name

    best = tuning.best
    keys = list(tuning.trials[0].values) if tuning.trials else []
    headings = ["", "trial", *(range_name(k) for k in keys), tuning.objective_metric, "status", "seconds"]
    rows = [[BEST_MARK if trial is best else "", trial.name, *(_value(trial.values[k]) for k in keys),
             _value(trial.objective), trial.status, "-" if trial.seconds is None else f"{trial.seconds:.1f}"]
            for trial in tuning.trials]
    widths = [max(len(row[i]) for row in [headings, *rows]) for i in range(len(headings))]
    widths[0] = len(BEST_MARK)  # rows line up whether or not one is marked
    left = {0, 1, len(headings) - 2}  # the mark, names and status read from the left; numbers from the right

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in
                         enumerate(zip(cells, widths, strict=True))).rstrip()

    return [line(headings), *(line(r) for r in rows)]


def summary_lines(tuning: LocalTuning) -> list[str]:
    """The table, then the best trial: its values, objective and the commands to look at it."""
    strategy = tuning.strategy + (f" (seed {tuning.seed})" if tuning.seed is not None else "")
    lines = [f"local tuning {tuning.name}: {tuning.status}, {len(tuning.trials)} trials, {strategy}, "
             f"{tuning.goal} {tuning.objective_metric}", "", *trials_table(tuning), ""]
    best = tuning.best
    if best is None:
        lines.append(f"best        none: no trial completed with a {tuning.objective_metric} value")
        return lines
    lines += [f"best ({BEST_MARK})    {best.name}: {tuning.objective_metric} {_value(best.objective)}",
              f"values      {_values_text(best)}",
              f"look at it  smtrain logs {best.name}  |  smtrain metrics {best.name}  |  "
              f"smtrain tensorboard {best.name}"]
    return lines


def run_local_tuning(spec_file: str, *, overrides: Sequence[str], catalog: Catalog, output: str,
                     tuning_name: str | None = None, seed: int | None = None) -> int:
    """Run the spec's tuning here (smtrain.api.tune_here); print as `output` asks; the exit code (0: a best
    trial, 1: none)."""
    from smtrain.api.tuning import tune_here
    from smtrain.cli.render import dump

    err = output != "text"  # stdout keeps the one document
    max_jobs: list[int] = []

    def started(trial: Trial) -> None:
        click.echo(mask_text(f"trial {trial.number}/{max_jobs[0] if max_jobs else '?'} {trial.name}: "
                             f"{_values_text(trial)}"), err=err)

    def ended(trial: Trial) -> None:
        got = f"{objective[0]} {_value(trial.objective)}"
        reason = f" ({' '.join(trial.failure_reason.split())[:REASON_SHOWN]})" if trial.failure_reason else ""
        click.echo(mask_text(f"  {trial.status} after {trial.seconds or 0:.1f}s: {got}{reason}"), err=err)

    objective: list[str] = []
    tuning = tune_here(spec_file, list(overrides), job_name=tuning_name, seed=seed, catalog=catalog,
                       on_start=started, on_end=ended, on_note=lambda note: click.echo(f"note: {note}", err=True),
                       on_ready=lambda _, tp: (max_jobs.append(tp.max_jobs), objective.append(tp.objective_metric)))
    if output == "text":
        click.echo(mask_text("\n".join(["", *summary_lines(tuning)])))
    else:
        dump(tuning.to_dict(), output)
    return exit_codes.OK if tuning.best is not None else exit_codes.FAILED
