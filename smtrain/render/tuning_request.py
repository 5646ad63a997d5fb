"""The CreateHyperParameterTuningJob request of a TuningPlan, rendered by smtrain's own code from the planned
training job's request: every trial is that job with the tuned hyperparameters changed.

The fields follow what the SageMaker Python SDK v2's HyperparameterTuner sends over the TensorFlow estimator
(the oracle test compares them), with one documented difference: no sagemaker_estimator_class_name or
sagemaker_estimator_module static hyperparameters, which only tell SDK v2's attach() which class to rebuild
(README, "The SageMaker SDK").
"""

from __future__ import annotations

from typing import Any

from smtrain.plan import tracking
from smtrain.plan.tuning import TuningPlan
from smtrain.render.training_request import render_training_request

# What a trial's definition carries of the training request as it is (HyperParameterTrainingJobDefinition
# has no TensorBoard, profiler, keep-alive or metrics-time-series fields).
_AS_TRAINED = ("InputDataConfig", "VpcConfig", "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
               "EnableManagedSpotTraining", "CheckpointConfig", "RetryStrategy", "Environment")
_TRIAL_RESOURCES = ("InstanceCount", "InstanceType", "VolumeSizeInGB", "VolumeKmsKeyId")


def render_tuning_request(tp: TuningPlan, name: str, source_uri: str) -> dict[str, Any]:
    """The CreateHyperParameterTuningJob request named `name`, its trials' bundle at `source_uri`."""
    # compute.prefer, a training plan and max_pending are refused for tuning (smtrain.spec.tuning).
    training = render_training_request(tp.plan, name, source_uri, capacity=False)
    tuned = {r.name for r in tp.ranges}
    resources = training["ResourceConfig"]
    algorithm = {k: v for k, v in training["AlgorithmSpecification"].items()
                 if k != "EnableSageMakerMetricsTimeSeries"}
    definition: dict[str, Any] = {
        "StaticHyperParameters": {k: v for k, v in training["HyperParameters"].items() if k not in tuned},
        "RoleArn": training["RoleArn"],
        "OutputDataConfig": training["OutputDataConfig"],
        "StoppingCondition": training["StoppingCondition"],
        "HyperParameterTuningResourceConfig": {k: resources[k] for k in _TRIAL_RESOURCES if k in resources},
        "AlgorithmSpecification": algorithm,
    }
    definition.update({k: training[k] for k in _AS_TRAINED if k in training})
    if "Environment" in definition:  # each trial's MLflow run goes under the tuning job's parent run
        definition["Environment"] = tracking.for_tuning(definition["Environment"], name)
    config: dict[str, Any] = {
        "Strategy": tp.strategy,
        "ResourceLimits": tp.resource_limits(),
        "TrainingJobEarlyStoppingType": tp.early_stopping,
        "HyperParameterTuningJobObjective": {"Type": tp.objective_type, "MetricName": tp.objective_metric},
        "ParameterRanges": tp.parameter_ranges(),
    }
    if tp.hyperband is not None:
        config["StrategyConfig"] = {"HyperbandStrategyConfig": dict(tp.hyperband)}
    request: dict[str, Any] = {"HyperParameterTuningJobName": name, "HyperParameterTuningJobConfig": config,
                               "TrainingJobDefinition": definition}
    if "Tags" in training:
        request["Tags"] = training["Tags"]
    return request
