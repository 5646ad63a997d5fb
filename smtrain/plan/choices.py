"""Where a job may run: one instance type and count, or compute.prefer's ordered fallback list.

With a fallback list (the API's ResourceConfig.InstancePreferences) SageMaker picks the first type
that has capacity when the job starts, so the instance is known only at run time. The request still
carries one `distribution` for the whole list, and the container decides the strategy from what it
finds (SM_HOSTS, SM_NUM_GPUS, TF_CONFIG: smtrain_tf/distribute/choice.py). So each choice is planned
as that decision will go for it, and a list whose choices cannot share one request is refused:

- multi_worker_mirrored: when any choice has several nodes (strategy auto), the request enables it
  for every choice; a one-node choice then runs one MultiWorkerMirrored worker over its own GPUs
  (the entrypoint takes the flag, as SageMaker's toolkit sets TF_CONFIG for one host too).
- horovod: processes per host default to each host's GPUs at run time (sagemaker-training's
  runner.py: processes_per_host defaults to SM_NUM_GPUS) when the request leaves the number out,
  which it does when the choices' GPU counts differ.
- smddp: refused, its request names one instance type (the sagemaker_instance_type hyperparameter).
- parameter_server needs two nodes in every choice (SageMaker turns it off on one host).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from smtrain.plan import distribution
from smtrain.plan.catalog import Catalog, CatalogError, InstanceType
from smtrain.plan.instance_choice import explicit_instance, tensorflow_warning
from smtrain.plan.instance_groups import Group
from smtrain.spec.instance_groups import distribution_group
from smtrain.spec.model import LoadedSpec
from smtrain.spec.problems import Path_, Problem, SpecError


@dataclass(frozen=True)
class Choice:
    """One way the job may run: the instance, its count, and what the container will do there."""

    instance: InstanceType
    nodes: int
    strategy: str
    strategy_reason: str
    processes_per_host: int
    replicas: int
    training_plan: str | None = None
    # The bundled entrypoint's batch and learning rate for these replicas (None for an own script).
    batch_per_replica: int | None = None
    global_batch: int | None = None
    effective_batch: int | None = None
    scaled_learning_rate: float | None = None
    # build.Wrap and build.Cost, filled in by build_plan (which imports this module, so not named here).
    wrap: Any = None
    cost: Any = None

    def summary(self) -> dict[str, Any]:
        """`plan -o json` key `choices`: one of these per choice, in the order SageMaker tries them."""
        cost = self.cost
        return {
            "instance_type": self.instance.name, "nodes": self.nodes, "gpus_per_node": self.instance.gpus,
            "gpu": self.instance.gpu, "training_plan": self.training_plan,
            "strategy": {"name": self.strategy, "reason": self.strategy_reason,
                         "processes_per_host": self.processes_per_host},
            "replicas": self.replicas,
            "batch": None if self.batch_per_replica is None else {
                "per_replica": self.batch_per_replica, "global": self.global_batch, "effective": self.effective_batch},
            "scaled_learning_rate": self.scaled_learning_rate,
            "wrap": self.wrap.summary() if self.wrap else None,
            "cost_usd": None if cost is None else {
                # None: the catalog knows no price for this type.
                "per_hour": None if cost.per_hour is None else round(cost.per_hour, 4),
                "max_for_run": None if cost.max_for_run is None else round(cost.max_for_run, 2),
                "price_region": cost.price_region, "price_is_estimate": cost.price_is_estimate},
        }


@dataclass(frozen=True)
class Candidate:
    """An instance the spec names (or the plan picked) before the strategy is decided."""

    instance: InstanceType
    nodes: int
    training_plan: str | None
    path: Path_  # compute.prefer[i], or compute for the one instance


def candidates(loaded: LoadedSpec, catalog: Catalog, instance: InstanceType | None,
               group: Group | None = None) -> list[Candidate]:
    """compute.prefer's entries from the catalog (every unknown type at its own line), else `instance`, or the
    planned `group` of a heterogeneous cluster."""
    c = loaded.spec.compute
    if group is not None:
        return [Candidate(group.instance, group.count, c.training_plan, ("compute", "instance_groups", group.index))]
    if not c.prefer:
        assert instance is not None
        return [Candidate(instance, c.nodes, c.training_plan, ("compute",))]
    found, problems = [], []
    for index, entry in enumerate(c.prefer):
        path = ("compute", "prefer", index)
        try:
            # In the catalog, and offered in the job's region where the catalog knows (as an explicit type).
            instance, _ = explicit_instance(catalog, entry.instance_type, loaded.region)
            found.append(Candidate(instance, entry.count, entry.training_plan, path))
        except CatalogError as exc:
            problems.append(loaded.problem(path + ("instance_type",), str(exc)))
    if problems:
        raise SpecError(problems)
    return found


@dataclass
class Decided:
    """The choices with their strategies, the request's one `distribution`, and what was found."""

    choices: list[Choice]
    sdk_distribution: dict[str, Any] | None
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def _findings(loaded: LoadedSpec, found: list[tuple[Candidate, Path_, str]], listed: bool) -> list[Problem]:
    """Rule findings as problems: with a list, each rule once, at the (first) preference it is about,
    naming the choices it applies to; a cluster's group's at that group."""
    if not listed:
        return [loaded.problem(_at(cand, path), message) for cand, path, message in found]
    grouped: dict[tuple[Path_, str], list[Candidate]] = {}
    for cand, path, message in found:
        grouped.setdefault((path, message), []).append(cand)
    out = []
    for (path, message), cands in grouped.items():
        if path in (("compute", "instance_type"), ("compute", "nodes"), ("compute", "volume_kms_key")):
            path = cands[0].path + (("count",) if path[-1] == "nodes" else ("instance_type",))
        names = ", ".join(f"{c.path[-1] + 1} ({c.instance.name} x{c.nodes})" for c in cands)
        out.append(loaded.problem(path, f"choice {names}: {message}"))
    return out


def _at(cand: Candidate, path: Path_) -> Path_:
    """A finding about the instance's type or count, at the group of compute.instance_groups it is about."""
    if cand.path[:2] == ("compute", "instance_groups") and path in (("compute", "instance_type"), ("compute", "nodes")):
        return cand.path + (("count",) if path[-1] == "nodes" else ("instance_type",))
    return path


# SageMaker refuses VolumeKmsKeyId on instance types with local (NVMe) storage, which it encrypts
# itself (botocore's model, ResourceConfig.VolumeKmsKeyId). Which types those are: the SageMaker
# SDK's own rule (sagemaker/utils.py volume_size_supported): a "d" in the family, or g5, g6, p5, trn1.
_LOCAL_STORAGE_FAMILIES = ("g5", "g6", "p5", "trn1")


def has_local_storage(instance_type: str) -> bool:
    family = instance_type.split(".")[1] if instance_type.count(".") == 2 else instance_type
    return "d" in family or family.startswith(_LOCAL_STORAGE_FAMILIES)


def decide(loaded: LoadedSpec, cands: list[Candidate], framework_version: str | None) -> Decided:
    """Each candidate's strategy as the container will decide it under the one request."""
    spec = loaded.spec
    requested, asked = spec.distribution.strategy, spec.distribution.processes_per_host
    listed = bool(spec.compute.prefer)
    resolved = [distribution.resolve(requested, c.nodes, c.instance.gpus) for c in cands]
    grouped = bool(spec.compute.instance_groups)
    if grouped and requested == "auto":
        # The TensorFlow toolkit starts the script once on every host of a cluster whose request enables no
        # strategy; one that spans a group is horovod or smddp, named (smtrain.spec.instance_groups).
        resolved = [("none", "auto with compute.instance_groups: every host runs your script once")]
    decided = Decided([], None)
    if listed and requested == "smddp":
        decided.errors.append(loaded.problem(("distribution", "strategy"), "smddp cannot run a fallback list: its "
                                             "request names one instance type (sagemaker_instance_type); use "
                                             "compute.instance_type, or strategy horovod / multi_worker_mirrored"))
    # One request for the list: where any choice needs several workers, every choice runs MultiWorkerMirrored.
    several = next((c for c, (s, _) in zip(cands, resolved, strict=True) if s == "multi_worker_mirrored"), None)
    if listed and requested == "auto" and several is not None:
        why = (f"auto: choice {several.path[-1] + 1} has {several.nodes} nodes, so the request enables "
               "multi_worker_mirrored for every choice")
        resolved = [(s, r) if s == "multi_worker_mirrored" else ("multi_worker_mirrored", why + "; one worker here")
                    for s, r in resolved]
    errors: list[tuple[Candidate, Path_, str]] = []
    warnings: list[tuple[Candidate, Path_, str]] = []
    for cand, (strategy, reason) in zip(cands, resolved, strict=True):
        found = distribution.check(strategy, framework_version, cand.instance, cand.nodes, asked,
                                   spec.tensorflow.image_uri)
        errors += [(cand, p, m) for p, m in found.errors]
        blackwell = tensorflow_warning(cand.instance, spec.tensorflow.image_uri) if listed else None
        if blackwell:  # the one instance's is the plan's own warning
            warnings.append((cand, ("compute", "instance_type"), blackwell))
        warnings += [(cand, p, m) for p, m in found.warnings]
        if spec.compute.volume_kms_key and has_local_storage(cand.instance.name):
            errors.append((cand, ("compute", "volume_kms_key"),
                           f"{cand.instance.name} has local NVMe storage, which SageMaker encrypts itself and for "
                           "which it refuses a VolumeKmsKeyId: remove compute.volume_kms_key"
                           + (" or this choice" if listed else "")))
        processes = distribution.processes_per_host(strategy, asked, cand.instance.gpus)
        decided.choices.append(Choice(cand.instance, cand.nodes, strategy, reason, processes,
                                      distribution.replicas(strategy, cand.nodes, cand.instance.gpus, processes),
                                      cand.training_plan))
    decided.errors += _findings(loaded, errors, listed)
    decided.warnings += _findings(loaded, warnings, listed)
    first = decided.choices[0]
    per_host = first.processes_per_host
    if listed and len({c.processes_per_host for c in decided.choices}) > 1:
        per_host = 0  # left out of the request: the toolkit starts one process per GPU on each host
    decided.sdk_distribution = distribution.sdk_distribution(first.strategy, per_host, spec.distribution.mpi_options)
    group = distribution_group(spec)
    if group is not None and decided.sdk_distribution is not None:
        decided.sdk_distribution["instance_groups"] = [group]  # SDK v2 sends the group's name
    if decided.sdk_distribution and "mpi" in decided.sdk_distribution and not per_host:
        del decided.sdk_distribution["mpi"]["processes_per_host"]
    return decided


def auto_only_warnings(loaded: LoadedSpec) -> list[Problem]:
    """The automatic-choice fields a fallback list leaves unused."""
    c = loaded.spec.compute
    if not c.prefer:
        return []
    return [loaded.problem(("compute", name), "used only with instance_type auto; compute.prefer names the types")
            for name in ("gpu", "gpus_per_node", "min_gpu_memory") if name in c.model_fields_set]
