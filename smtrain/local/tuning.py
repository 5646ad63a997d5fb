"""`smtrain tune --local`: a tuning job's trials run here, one after another, through the local backend.

Each trial is the spec re-read with its values set (`trial_overrides`, as `--set` would) and run as
a local job named `<tuning name>-NNN`, exactly as `submit --local` runs one, so `smtrain logs`,
`metrics` and `tensorboard` work on every trial. Its objective is what SageMaker would take: the
LAST value that the objective's MetricDefinitions regex finds in the chief host's (algo-1's) output.
Values come from a seeded random search or, for grid, every combination (smtrain.local.trial_sampling);
Bayesian and Hyperband need SageMaker's own search, so they fall back to random with a note. As on
AWS, a failed trial is recorded and the tuning goes on.

The tuning's record lives in ${SMTRAIN_HOME:-~/.smtrain}/local-tuning/<name>/record.json (the keys of
`tune --local -o json`), rewritten after every trial.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.local.records import JobStore, iso, read_logs
from smtrain.plan import tracking
from smtrain.spec.tuning import range_name

if TYPE_CHECKING:
    from smtrain.local.backend import LocalBackend
    from smtrain.plan.build import Plan
    from smtrain.plan.catalog import Catalog
    from smtrain.plan.tuning import TuningPlan
    from smtrain.spec.tuning import TuningSpec

CHIEF = "algo-1"  # the host whose output SageMaker reads a job's metrics from (rank 0 / the chief worker)
TRIAL_DIGITS = 3  # <tuning name>-001


class TuningStore(JobStore):
    """Local tunings' records: ${SMTRAIN_HOME}/local-tuning/<name>/record.json, kept as a job's is."""

    def __init__(self, home: Path | None = None) -> None:
        super().__init__(home)
        self.root = self.root.parent / "local-tuning"

    @staticmethod
    def problem(record: Any) -> str | None:
        """A tuning's record (Tuning.to_dict) has its own keys: a name and a list of trials."""
        if not isinstance(record, dict):
            return f"a JSON {type(record).__name__}, not an object"
        if not isinstance(record.get("tuning_name"), str) or not isinstance(record.get("trials"), list):
            return "no tuning name or trials"
        return None


@dataclass
class Trial:
    number: int  # 1, 2, ...
    name: str  # the local job: <tuning name>-001
    values: dict[str, Any]  # range key (training.learning_rate) -> this trial's value
    status: str = "Pending"  # then Completed | Failed | Stopped
    objective: float | None = None  # the objective metric's last value in the chief's output
    seconds: float | None = None
    failure_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "name": self.name, "status": self.status, "values": dict(self.values),
                "hyperparameters": {range_name(k): v for k, v in self.values.items()},
                "objective": self.objective, "seconds": None if self.seconds is None else round(self.seconds, 1),
                "failure_reason": self.failure_reason}


@dataclass
class LocalTuning:
    name: str
    objective_metric: str  # validation:accuracy
    goal: str  # maximize | minimize
    objective_regex: str
    strategy: str  # what ran: random | grid
    requested_strategy: str  # what the spec asks for
    seed: int | None  # the random search's (None for grid)
    trials: list[Trial]
    notes: list[str] = field(default_factory=list)
    status: str = "InProgress"  # then Completed (some trial gave the objective) | Failed | Stopped
    created: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))
    ended: dt.datetime | None = None

    @property
    def best(self) -> Trial | None:
        """The completed trial with the best objective; the first of equals (as it was found first)."""
        scored = [t for t in self.trials if t.status == "Completed" and t.objective is not None]
        if not scored:
            return None
        sign = -1 if self.goal == "maximize" else 1
        return min(scored, key=lambda t: (sign * (t.objective or 0.0), t.number))

    def to_dict(self) -> dict[str, Any]:
        """`smtrain tune --local -o json` (README "Tuning here")."""
        best = self.best
        return {
            "tuning_name": self.name, "backend": "local", "status": self.status,
            "objective": {"metric": self.objective_metric, "goal": self.goal, "regex": self.objective_regex},
            "strategy": self.strategy, "requested_strategy": self.requested_strategy, "seed": self.seed,
            "created": iso(self.created), "ended": iso(self.ended),
            "trials": [t.to_dict() for t in self.trials],
            "best": best.to_dict() if best is not None else None,
            "notes": list(self.notes),
        }


def search(tp: TuningPlan, seed: int) -> tuple[str, int | None, list[dict[str, Any]], list[str]]:
    """(strategy run here, its seed, each trial's values, notes on what differs from SageMaker)."""
    from smtrain.local.trial_sampling import grid_assignments, random_assignments

    tuning = tp.tuning
    notes = []
    if tuning.strategy == "grid":
        strategy, used_seed, assignments = "grid", None, grid_assignments(tp.ranges)[:tp.max_jobs]
    else:
        if tuning.strategy in ("bayesian", "hyperband"):
            notes.append(f"{tuning.strategy} search is SageMaker's own: --local samples at random instead "
                         f"(seed {seed})")
        strategy, used_seed, assignments = "random", seed, random_assignments(tp.ranges, tp.max_jobs, seed)
    if tp.max_parallel_jobs > 1:
        notes.append(f"max_parallel_jobs {tp.max_parallel_jobs} is for SageMaker: --local runs one trial at a time")
    if tuning.early_stopping != "off":
        notes.append("early_stopping is SageMaker's: every local trial runs to its end")
    if tuning.max_runtime is not None:
        notes.append("max_runtime is SageMaker's: --local runs every trial")
    return strategy, used_seed, assignments, notes


def objective_value(log_dir: Path, metric: str, regex: str, host: str = CHIEF) -> float | None:
    """The last value `regex` finds in `host`'s log: the number SageMaker takes as a trial's objective."""
    from smtrain.local.metric_series import matches

    lines = [(e.timestamp, e.message) for e in read_logs(log_dir) if e.host == host]
    found = matches([{"Name": metric, "Regex": regex}], lines).get(metric)
    return found[-1][1] if found else None


def trial_name(tuning_name: str, number: int) -> str:
    return f"{tuning_name}-{number:0{TRIAL_DIGITS}d}"


def trial_loader(spec_file: str, overrides: Sequence[str], tuning: TuningSpec,
                 catalog: Catalog) -> Callable[[dict[str, Any]], Plan]:
    """One trial's Plan: the spec re-read with the user's --set, the trial's values, and no tuning section."""
    from smtrain.render.checked_plan import checked_plan
    from smtrain.spec.model import load_spec
    from smtrain.spec.tuning import trial_overrides

    def load(values: dict[str, Any]) -> Plan:
        loaded = load_spec(spec_file, [*overrides, *trial_overrides(tuning, values), "tuning=null"])
        return checked_plan(loaded, catalog)

    return load


def _check_free(tuning: LocalTuning, backend: LocalBackend, store: TuningStore) -> None:
    """Refuse before the first trial when a name is taken (a later trial would stop on it)."""
    taken = ([f"a local tuning named {tuning.name}"] if store.has(tuning.name) else []) + [
        f"a local job named {t.name}" for t in tuning.trials if backend.store.has(t.name)]
    if taken:
        more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        raise UserError(f"{taken[0]}{more} is already in {store.root.parent}: pick another --job-name",
                        exit_codes.USAGE)


def prepare(tp: TuningPlan, *, name: str, seed: int) -> LocalTuning:
    """The tuning with its trials drawn, nothing run yet (its notes say what differs from SageMaker)."""
    strategy, used_seed, assignments, notes = search(tp, seed)
    return LocalTuning(name=name, objective_metric=tp.objective_metric, goal=tp.objective_type.lower(),
                       objective_regex=tp.objective_regex, strategy=strategy, requested_strategy=tp.tuning.strategy,
                       seed=used_seed, notes=notes,
                       trials=[Trial(n, trial_name(name, n), values) for n, values in enumerate(assignments, 1)])


def run_trials(tuning: LocalTuning, load_trial: Callable[[dict[str, Any]], Plan], *,
               backend: LocalBackend | None = None, store: TuningStore | None = None,
               on_start: Callable[[Trial], None] | None = None,
               on_end: Callable[[Trial], None] | None = None) -> LocalTuning:
    """Run every trial of `tuning` to its end, one after another; the tuning as it ended.

    A trial whose values the spec refuses (SpecError), or whose job fails, is Failed and the next one
    runs. A problem with the run itself (a place it cannot write, a taken name) raises UserError.
    Ctrl-C stops the running trial, records the tuning as Stopped, and raises KeyboardInterrupt.
    """
    from smtrain.local.backend import LocalBackend, local_request
    from smtrain.spec.problems import SpecError

    backend = backend or LocalBackend()
    store = store or TuningStore(backend.store.root.parent)
    _check_free(tuning, backend, store)
    store.create(tuning.name)
    save = lambda: store.write(tuning.name, tuning.to_dict())  # noqa: E731 - after every change
    save()
    try:
        for trial in tuning.trials:
            if on_start:
                on_start(trial)
            started = time.monotonic()
            try:
                plan = load_trial(trial.values)
                # As on SageMaker: the trial's MLflow run (if any) goes under the tuning's parent run.
                plan = replace(plan, environment=tracking.for_tuning(plan.environment, tuning.name))
                job = backend.run(local_request(plan, trial.name))
            except SpecError as exc:
                trial.status, trial.failure_reason = "Failed", f"the spec refuses these values: {exc}"
            except KeyboardInterrupt:
                trial.status = "Stopped"
                raise
            else:
                trial.status, trial.failure_reason = job.status, job.failure_reason
                trial.objective = objective_value(backend.store.log_dir(trial.name), tuning.objective_metric,
                                                  tuning.objective_regex)
            trial.seconds = time.monotonic() - started
            save()
            if on_end:
                on_end(trial)
    except BaseException as exc:
        tuning.status = "Stopped" if isinstance(exc, KeyboardInterrupt) else "Failed"
        tuning.ended = dt.datetime.now(dt.timezone.utc)
        save()
        raise
    tuning.status = "Completed" if tuning.best is not None else "Failed"
    tuning.ended = dt.datetime.now(dt.timezone.utc)
    save()
    return tuning


def read_local_tuning(name: str, home: Path | None = None) -> dict[str, Any] | None:
    """A local tuning's record (the keys of `tune --local -o json`), None if there is none by that name."""
    store = TuningStore(home)
    return store.read(name) if store.has(name) else None
