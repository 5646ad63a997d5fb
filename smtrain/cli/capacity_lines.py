"""The capacity, retry and key lines of `plan` and `submit --dry-run` (compute.prefer and the rest)."""

from __future__ import annotations

from typing import Any

from smtrain.plan import tracking
from smtrain.plan.build import Plan
from smtrain.spec.tracking import is_arn
from smtrain.spec.units import format_duration


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _choice_line(number: int, choice: Any) -> str:
    line = (f"{number}. {choice.instance.name} x {choice.nodes}: {choice.strategy}, {choice.replicas} "
            f"replica{'s' if choice.replicas != 1 else ''}")
    if choice.strategy in ("horovod", "smddp"):
        line += f", {choice.processes_per_host} processes per host"
    if choice.global_batch is not None:
        line += f", batch {choice.effective_batch} global, learning rate {choice.scaled_learning_rate:g}"
    elif choice.wrap is not None and choice.wrap.batch == "per_replica":
        line += f", your batch_size x {choice.wrap.batch_factor}"
    if choice.cost is not None and choice.cost.per_hour is not None:
        line += f", {_money(choice.cost.per_hour)}/h (at most {_money(choice.cost.max_for_run)})"
    elif choice.cost is not None:
        line += ", cost unknown (the catalog has no price)"
    if choice.training_plan:
        line += f", training plan {choice.training_plan}"
    return line


def plan_lines(plan: Plan) -> list[str]:
    """Each choice of a fallback list, then the capacity, retry and key settings that are set."""
    c, lines = plan.spec.compute, []
    if c.prefer:
        lines.append("  choices       compute.prefer: SageMaker runs the first with capacity; each decides its "
                     "strategy and maths on its own hosts")
        lines += [f"                {_choice_line(n, choice)}" for n, choice in enumerate(plan.choices, 1)]
    lines += group_lines(plan)
    capacity = []
    if c.training_plan:
        capacity.append(f"training plan {c.training_plan}")
    if c.max_pending is not None:
        capacity.append(f"waits at most {format_duration(c.max_pending)} for capacity")
    if c.max_retry_attempts is not None:
        capacity.append(f"retried up to {c.max_retry_attempts} times after an internal error")
    if capacity:
        lines.append(f"  capacity      {'; '.join(capacity)}")
    keys = [f"{what} {key}" for what, key in (("output", plan.spec.output_kms_key), ("volume", c.volume_kms_key))
            if key]
    if keys:
        lines.append(f"  kms keys      {', '.join(keys)}")
    return lines + job_option_lines(plan)


def group_lines(plan: Plan) -> list[str]:
    """A heterogeneous cluster's groups: each one's hosts, what runs there, the channels it alone gets, its cost."""
    if not plan.instance_groups:
        return []
    spread = plan.distribution.get("instance_groups", []) if plan.distribution else []
    lines = ["  groups        compute.instance_groups: your script reads SM_CURRENT_INSTANCE_GROUP"]
    for group in plan.instance_groups:
        runs = (f"{plan.strategy} over its {group.count} host(s)" if group.name in spread
                else "your script once per host")
        only = [name for name, ch in plan.spec.inputs.items() if ch.instance_groups and group.name in ch.instance_groups]
        price = "price unknown" if group.per_hour is None else f"{_money(group.per_hour)}/h"
        lines.append(f"                {group.name}: {group.instance.name} x {group.count}, {runs}, {price}"
                     + (f"; its own channels: {', '.join(only)}" if only else ""))
    return lines


def tracking_lines(plan: Plan) -> list[str]:
    """Where the job's runs are tracked: MLflow (SageMaker-managed or a URI) and SageMaker Experiments."""
    t, lines = plan.spec.tracking, []
    if t.mlflow is not None:
        named = ", ".join(f"{what} {value}" for what, value in (("experiment", t.experiment), ("run", t.run)) if value)
        how = ("SageMaker-managed (MlflowConfig)" if is_arn(t.mlflow)
               else "MLFLOW_TRACKING_URI" + (", MLFLOW_EXPERIMENT_NAME" if t.experiment else ""))
        lines.append(f"  tracking      MLflow {t.mlflow}{f' ({named})' if named else ''}: {how}")
        added = ", ".join(tracking.requirements(plan.spec))
        lines.append(f"                the chief logs one run; requirements.txt gets {added}")
    if t.sagemaker_experiment is not None:
        e = t.sagemaker_experiment
        filed = ", ".join(f"{what} {value}" for what, value in (("trial", e.trial), ("run", e.run)) if value)
        lines.append(f"  experiment    SageMaker Experiments {e.experiment}{f' ({filed})' if filed else ''}")
    return lines


def job_option_lines(plan: Plan) -> list[str]:
    """The job's switches that are on (remote debug, the infrastructure check, ...) and the model registry."""
    spec, c = plan.spec, plan.spec.compute
    switches = [text for on, text in ((c.remote_debug, "remote debug (smtrain debug JOB)"),
                                      (c.infra_check, "infrastructure check before the job"),
                                      (not spec.output_compression, "output uncompressed"),
                                      (spec.session_tag_chaining, "session tag chaining")) if on]
    lines = [f"  options       {', '.join(switches)}"] if switches else []
    lines += tracking_lines(plan)
    if spec.model_package:
        lines.append(f"  registers in  {spec.model_package.group}")
    if spec.model_uri:
        lines.append(f"  starts from   {spec.model_uri} (channel {spec.model_channel}: "
                     f"SM_CHANNEL_{spec.model_channel.upper()})")
    if spec.checkpoints and spec.checkpoint_local_path:
        lines.append(f"  checkpoints   {spec.checkpoints} synced with {spec.checkpoint_local_path}")
    mounted = [f"{name}: {ch.file_system.type} {ch.file_system.id}:{ch.file_system.directory} ({ch.file_system.access_mode})"
               for name, ch in spec.inputs.items() if ch.file_system is not None]
    if mounted:
        lines.append(f"  mounted       {'; '.join(mounted)}")
    if spec.code.dependencies:
        lines.append(f"  code also     {', '.join(d.rstrip('/') + '/' for d in spec.code.dependencies)} "
                     "(code.dependencies, each at the bundle's root)")
    return lines


def instances_text(resources: dict[str, Any]) -> str:
    """`instances` in the dry run: the count and type, the fallback list in order, or the cluster's groups."""
    groups = resources.get("InstanceGroups")
    if groups:
        return ", ".join(f"{g['InstanceGroupName']}: {g['InstanceCount']} x {g['InstanceType']}" for g in groups)
    preferences = resources.get("InstancePreferences")
    if preferences:
        listed = " or ".join(f"{p.get('InstanceCount', resources.get('InstanceCount', '?'))} x {p['InstanceType']}"
                             for p in preferences)
        return f"first with capacity of {listed}"
    return f"{resources['InstanceCount']} x {resources['InstanceType']}"


def dry_run_lines(request: dict[str, Any]) -> list[str]:
    """What the request carries beyond the usual: training plan, pending limit, retries, keys."""
    resources, stop = request.get("ResourceConfig", {}), request.get("StoppingCondition", {})
    found = []
    if "TrainingPlanArn" in resources:
        found.append(f"  training plan {resources['TrainingPlanArn']}")
    if "MaxPendingTimeInSeconds" in stop:
        found.append(f"  max pending   {stop['MaxPendingTimeInSeconds']} s")
    if "RetryStrategy" in request:
        found.append(f"  retries       {request['RetryStrategy']['MaximumRetryAttempts']}")
    keys = [f"{what} {key}" for what, key in (("output", request.get("OutputDataConfig", {}).get("KmsKeyId")),
                                              ("volume", resources.get("VolumeKmsKeyId"))) if key]
    if keys:
        found.append(f"  kms keys      {', '.join(keys)}")
    switches = [text for key, text in (("RemoteDebugConfig", "remote debug"), ("InfraCheckConfig", "infrastructure check"),
                                       ("SessionChainingConfig", "session tag chaining")) if key in request]
    if request.get("OutputDataConfig", {}).get("CompressionType") == "NONE":
        switches.append("output uncompressed")
    if switches:
        found.append(f"  options       {', '.join(switches)}")
    if "ModelPackageConfig" in request:
        found.append(f"  registers in  {request['ModelPackageConfig']['ModelPackageGroupArn']}")
    return found
