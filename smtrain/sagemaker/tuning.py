"""TuningPlan -> SageMaker: the SDK's HyperparameterTuner over the estimator submit builds; dry run or real.

The tuner wraps the very estimator `submit` builds (estimator.build_estimator, from the same
EstimatorSpec), so a trial is the planned training job with the tuned hyperparameters changed. Its
`fit()` ends in ``Session.create_tuning_job``, which hands the finished CreateHyperParameterTuningJob
request to ``Session._intercept_create_request`` (func_name "create_tuning_job"): the dry-run session
keeps it and sends nothing (no credentials, no connection), the real one sends it the way that never
makes two jobs (sagemaker.create, TUNING). So the dry run is the request the server receives.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smtrain import exit_codes
from smtrain.bundle.request import Request, make_request
from smtrain.errors import UserError
from smtrain.jobs import reattach_command
from smtrain.plan.tuning import TuningPlan, new_tuning_job_name, request_problems
from smtrain.sagemaker.submit import Submitted, _sdk_refusals, estimator_spec
from smtrain.sagemaker.upload import upload_bundle
from smtrain.spec.patterns import Pattern
from smtrain.spec.problems import SpecError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import sagemaker
    from sagemaker.tuner import HyperparameterTuner

    from smtrain.sagemaker.estimator import EstimatorSpec

# HyperParameterTuningJobName's pattern and length in botocore's model.
TUNING_JOB_NAME = Pattern("[A-Za-z0-9](?:-*[A-Za-z0-9])*", 32)
_SDK_FUNC = "create_tuning_job"  # Session.create_tuning_job's name, as it passes it to the intercept


def validate_tuning_job_name(name: str) -> None:
    """Raise UserError (exit 2) unless `name` is a valid HyperParameterTuningJobName."""
    if not TUNING_JOB_NAME.matches(name):
        raise UserError(f"invalid tuning job name {name!r}: 1-32 letters, digits and hyphens, starting and "
                        "ending with a letter or digit (SageMaker's limit for tuning jobs)", exit_codes.USAGE)


def build_tuner(tp: TuningPlan, spec: EstimatorSpec, session: sagemaker.Session) -> HyperparameterTuner:
    """The SDK's HyperparameterTuner over build_estimator(spec, session)."""
    from smtrain.sagemaker.estimator import build_estimator

    estimator = build_estimator(spec, session)
    from sagemaker.parameter import CategoricalParameter, ContinuousParameter, IntegerParameter
    from sagemaker.tuner import HyperbandStrategyConfig, HyperparameterTuner, StrategyConfig

    ranges: dict[str, Any] = {}
    for r in tp.ranges:
        if r.kind == "categorical":
            ranges[r.name] = CategoricalParameter(r.value_texts())
        elif r.kind == "integer":
            ranges[r.name] = IntegerParameter(r.min, r.max, scaling_type=r.scaling)
        else:
            ranges[r.name] = ContinuousParameter(r.min, r.max, scaling_type=r.scaling)
    strategy_config = None
    if tp.hyperband is not None:
        strategy_config = StrategyConfig(HyperbandStrategyConfig(
            max_resource=tp.hyperband["MaxResource"], min_resource=tp.hyperband["MinResource"]))
    return HyperparameterTuner(
        estimator,
        objective_metric_name=tp.objective_metric,
        hyperparameter_ranges=ranges,
        # The tuner sends its own metric definitions, not the estimator's: the same list.
        metric_definitions=[dict(m) for m in spec.metric_definitions],
        strategy=tp.strategy,
        objective_type=tp.objective_type,
        max_jobs=tp.max_jobs,
        max_parallel_jobs=tp.max_parallel_jobs,
        max_runtime_in_seconds=tp.max_runtime,
        strategy_config=strategy_config,
        early_stopping_type=tp.early_stopping,
    )


def start_tuning(tuner: HyperparameterTuner, spec: EstimatorSpec, name: str) -> None:
    """``tuner.fit()`` without waiting: the one call the dry run and a real tune share."""
    from smtrain.sagemaker.estimator import training_inputs

    # The tuner reads estimator.model_data to look for JumpStart artifacts, and for an estimator that
    # never trained that property logs a warning meant for pipeline builders: not this user's concern.
    estimator_log = logging.getLogger("sagemaker.estimator")
    level = estimator_log.level
    estimator_log.setLevel(logging.ERROR)
    try:
        # include_cls_metadata=False: a framework estimator gets sagemaker_estimator_* anyway (the SDK
        # adds them for attach()); the trials' program ignores them.
        tuner.fit(training_inputs(spec), job_name=name, include_cls_metadata=False, wait=False)
    finally:
        estimator_log.setLevel(level)


def render_tuning_request(tp: TuningPlan, spec: EstimatorSpec, name: str) -> dict[str, Any]:
    """The exact CreateHyperParameterTuningJob request, offline (see the module's docstring)."""
    from smtrain.sagemaker.estimator import make_session

    validate_tuning_job_name(name)
    session = make_session(spec.region, dry_run=True)
    start_tuning(build_tuner(tp, spec, session), spec, name)
    requests = [req for func, req in session.captured if func == _SDK_FUNC]
    if len(requests) != 1:
        raise RuntimeError(f"expected one CreateHyperParameterTuningJob request, captured {len(requests)}")
    return requests[0]


def _refuse_over_limits(tp: TuningPlan, body: dict[str, Any]) -> None:
    """The SDK's request against every limit of botocore's model, before anything is sent (exit 2)."""
    problems = request_problems(tp.plan, body)
    if problems:
        raise SpecError(problems)


def _request(tp: TuningPlan, name: str | None) -> Request:
    name = name or new_tuning_job_name(tp.plan.spec.name)
    validate_tuning_job_name(name)
    return make_request(tp.plan, name)  # the bundle and its content-addressed place, as submit's


def dry_run(tp: TuningPlan, job_name: str | None = None) -> dict[str, Any]:
    """The tuning job's request and what would be uploaded; offline, no credentials."""
    request = _request(tp, job_name)
    with _sdk_refusals():
        body = render_tuning_request(tp, estimator_spec(request), request.job_name)
    _refuse_over_limits(tp, body)
    return {"tuning_job_name": request.job_name, "request": body, "upload": request.upload_summary(),
            "tuning": tp.summary()}


@dataclass(frozen=True)
class TuningSubmitted(Submitted):
    """A tuning job SageMaker accepted, and how its code got there (Submitted's fields, its own JSON)."""

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON of `smtrain tune` (README: "Hyperparameter tuning")."""
        from smtrain.sagemaker.tuning_jobs import tuning_console_url

        name, flag = self.job_name, self.region_flag
        return {
            "tuning_job_name": name, "arn": self.arn, "region": self.region, "status": "InProgress",
            "upload": self.upload.to_dict(), "console_url": tuning_console_url(self.region, name),
            "commands": {verb: reattach_command(*words, region=flag) for verb, words in (
                ("status", ("status", name)), ("wait", ("wait", name)), ("logs", ("logs", name)),
                ("stop", ("stop", name)))},
        }


def tune(tp: TuningPlan, job_name: str | None = None, *, progress: bool = False) -> TuningSubmitted:
    """Upload the bundle (unless S3 has it) and create the tuning job, through the dry run's code."""
    from smtrain.sagemaker import estimator as sm
    from smtrain.sagemaker.aws import api_errors, boto_session
    from smtrain.sagemaker.create import TUNING, job_arn

    request = _request(tp, job_name)
    spec, name = estimator_spec(request), request.job_name
    region = tp.plan.region
    boto = boto_session(region)
    with api_errors(f"check that the tuning job name {name} is free"):
        if job_arn(boto.client("sagemaker"), name, TUNING) is not None:
            raise UserError(f"a tuning job named {name} already exists in {region}: pick another --job-name",
                            exit_codes.API)
    with _sdk_refusals():
        _refuse_over_limits(tp, render_tuning_request(tp, spec, name))
        session = sm.make_session(region, dry_run=False, boto_session=boto)
        tuner = build_tuner(tp, spec, session)
    with api_errors(f"upload the source bundle to {request.source_uri}"):
        uploaded = upload_bundle(session.s3_client, request.bundle, request.source_uri, progress=progress)
    with api_errors(f"create tuning job {name}"), _sdk_refusals():
        start_tuning(tuner, spec, name)
    outcome = session.created
    return TuningSubmitted(request, uploaded, outcome.arn, outcome.confirmed_by_describe)
