"""Hyperparameter tuning for people: the plan's tuning lines, the dry run, the created job, and `status`."""

from __future__ import annotations

from typing import Any

from smtrain.jobs import JobInfo
from smtrain.redact import mask_text


def _range_text(r: dict[str, Any]) -> str:
    if r["type"] == "categorical":
        return f"{r['field']}: one of {', '.join(str(v) for v in r['values'])}"
    return f"{r['field']}: {r['min']} to {r['max']} ({r['type']}, {r['scaling']} scaling)"


def tuning_lines(summary: dict[str, Any]) -> list[str]:
    """The tuning part of `plan` and `tune --dry-run` (TuningPlan.summary())."""
    objective = summary["objective"]
    limits = f"{summary['max_jobs']} trials, {summary['max_parallel_jobs']} at a time"
    if summary["max_runtime_seconds"]:
        limits += f", at most {summary['max_runtime_seconds']} s in all"
    lines = ["Tuning:",
             f"  objective     {objective['type'].lower()} {objective['metric']} (read with /{objective['regex']}/)",
             f"  strategy      {summary['strategy']}, early stopping {summary['early_stopping'].lower()}"
             + (f", epochs {summary['hyperband']['MinResource']}-{summary['hyperband']['MaxResource']} per trial"
                if summary["hyperband"] else ""),
             f"  limits        {limits}"]
    lines += [f"  range         {_range_text(r)}" for r in summary["ranges"]]
    lines += [f"  note          {note}" for note in summary["notes"]]
    return lines


def tuning_dry_run_text(rendered: dict[str, Any], region: str) -> str:
    """`tune --dry-run` for people; the whole request is -o json / -o yaml."""
    from smtrain.cli.capacity_lines import instances_text

    definition = rendered["request"]["TrainingJobDefinition"]
    resources = definition.get("HyperParameterTuningResourceConfig") or definition.get("ResourceConfig") or {}
    upload = rendered["upload"]
    static = definition.get("StaticHyperParameters", {})
    lines = [f"Dry run: nothing was sent. CreateHyperParameterTuningJob {rendered['tuning_job_name']} in {region}",
             f"  image         {definition['AlgorithmSpecification'].get('TrainingImage', '-')}",
             f"  each trial    {instances_text(resources)}, at most "
             f"{definition['StoppingCondition'].get('MaxRuntimeInSeconds', '-')} s",
             f"  static        {len(static)} hyperparameters: " + ", ".join(
                 f"{k}={v}" for k, v in sorted(static.items()) if not k.startswith("sagemaker_")),
             f"  code          {upload['uri']} ({upload['bytes']:,} bytes, sha256 {upload['sha256'][:12]})",
             *tuning_lines(rendered["tuning"]),
             "The exact request: add -o json (or -o yaml)."]
    return mask_text("\n".join(lines))


def tuning_submitted_text(data: dict[str, Any]) -> str:
    up = data["upload"]
    lines = [(f"uploaded {up['uri']} ({up['bytes']:,} bytes)" if up["uploaded"]
              else f"source bundle already in S3, not uploaded again: {up['uri']}"),
             f"created tuning job {data['tuning_job_name']} in {data['region']}"]
    lines += [f"  {verb:<8}{command}" for verb, command in data["commands"].items()]
    lines.append(f"  {'console':<8}{data['console_url']}")
    return mask_text("\n".join(lines))


def _objective(value: Any) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, (int, float)) else str(value)


def _hyperparameters(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "-"


def tuning_job_text(job: JobInfo, when: Any) -> str:
    """`smtrain status` of a tuning job: its state, trials by status, the best trial, then each trial."""
    tuning: dict[str, Any] = getattr(job, "tuning", {})
    counts = tuning.get("trials") or {}
    objective = tuning.get("objective") or {}
    status = job.status + (f" ({job.secondary_status})" if job.secondary_status else "")
    rows = [("tuning", job.name), ("status", status), ("created", when(job.created)),
            ("ended", when(job.ended)),
            ("objective", f"{(objective.get('type') or '-').lower()} {objective.get('metric') or '-'}"),
            ("strategy", f"{tuning.get('strategy')}, {tuning.get('max_jobs')} trials, "
                         f"{tuning.get('max_parallel_jobs')} at a time")]
    if job.instance_type:
        rows.append(("instances", f"{job.instance_count or 1} x {job.instance_type} per trial"))
    rows.append(("trials", f"{counts.get('total', 0)}: " + ", ".join(
        f"{counts.get(k, 0)} {k.replace('_', ' ')}" for k in ("completed", "in_progress", "stopped", "failed",
                                                              "retryable_error") if counts.get(k))))
    best = tuning.get("best")
    if best:
        rows += [("best", best["name"]), ("objective", _objective(best["objective"])),
                 ("hyperparams", _hyperparameters(best["hyperparameters"]))]
        if job.model_artifacts:
            rows.append(("model", job.model_artifacts))
    else:
        rows.append(("best", "none yet: no trial has reported the objective"))
    if job.failure_reason:
        rows.append(("failure", job.failure_reason))
    if job.console_url:
        rows.append(("console", job.console_url))
    lines = [f"{label:<11} {value}" for label, value in rows]
    trials = tuning.get("trial_jobs") or []
    if trials:
        lines.append("")
        width = max(len(t["name"] or "") for t in trials)
        for t in trials:
            lines.append(f"  {t['name']:<{width}}  {t['status']:<10} {_objective(t['objective']):>10}  "
                         f"{_hyperparameters(t['hyperparameters'])}")
    return mask_text("\n".join(lines))
