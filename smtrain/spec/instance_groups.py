"""The rules of compute.instance_groups (a heterogeneous cluster) that need no catalog.

From CreateTrainingJob's model (botocore: ResourceConfig.InstanceGroups, at most 5, each named 1-64
characters, in place of InstanceType and InstanceCount), SDK v2 (fw_utils.validate_distribution and
Framework._distribution_configuration: one group in `distribution`, and a group there only under mpi or
smdistributed dataparallel) and the TensorFlow toolkit (sagemaker_tensorflow_container/training.py: the hosts
of the distribution's group run mpirun, every other host runs the entry point once). The catalog's rules (known
types, the strategy on the group's type) are the plan's.

Groups run the user's own script, unwrapped: it reads SM_CURRENT_INSTANCE_GROUP to know its part (a tf.data
service on a CPU group feeding the GPU group, as SageMaker's heterogeneous-cluster examples do). The bundled
entrypoint and the wrap lay out one instance type's replicas on every host, so they are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smtrain.spec.problems import Path_, Problem

MAX_GROUPS = 5  # ResourceConfig.InstanceGroups' max in the service model
# A group of the cluster gets a strategy only under mpirun (SDK v2 refuses the others with groups).
GROUP_STRATEGIES = ("horovod", "smddp")
_ALLOWED = ("auto", "none", *GROUP_STRATEGIES)


def distribution_group(spec: Any) -> str | None:
    """The group the strategy spans: distribution.instance_groups' one name, or the only group under
    horovod/smddp (SDK v2 names it itself), else None (every host runs the script once)."""
    groups = spec.compute.instance_groups
    if not groups:
        return None
    if spec.distribution.instance_groups:
        return spec.distribution.instance_groups[0]
    if len(groups) == 1 and spec.distribution.strategy in GROUP_STRATEGIES:
        return groups[0].name
    return None


def instance_group_problems(spec: Any, problem: Callable[[Path_, str], Problem]) -> list[Problem]:
    """What compute.instance_groups needs and cannot be combined with, each made by `problem`
    (LoadedSpec.problem) at its field; the group names elsewhere in the spec checked against it."""
    groups = spec.compute.instance_groups
    named = [(("distribution", "instance_groups"), spec.distribution.instance_groups)]
    named += [(("inputs", name, "instance_groups"), ch.instance_groups) for name, ch in spec.inputs.items()]
    if groups is None:
        return [problem(at, "names groups of compute.instance_groups, which the spec has not: add them or "
                            "remove this") for at, names in named if names is not None]
    where = ("compute", "instance_groups")
    if not groups:
        return [problem(where, "instance_groups needs at least one {name, instance_type, count}, or leave it out")]
    out = []
    if len(groups) > MAX_GROUPS:
        out.append(problem(where, f"SageMaker takes at most {MAX_GROUPS} instance groups, not {len(groups)}"))
    seen: set[str] = set()
    for index, group in enumerate(groups):
        if group.name in seen:
            out.append(problem(where + (index, "name"), f"{group.name} names two groups: each needs its own name"))
        seen.add(group.name)
    c = spec.compute
    for name in ("instance_type", "nodes", "prefer", "gpu", "gpus_per_node", "min_gpu_memory"):
        if name in c.model_fields_set:
            out.append(problem(("compute", name), f"compute.instance_groups names each group's type and count: "
                                                  f"remove compute.{name}"))
    if spec.code.entry_point is None:
        out.append(problem(where, "a heterogeneous cluster runs your own script on every host, which reads "
                                  "SM_CURRENT_INSTANCE_GROUP to know its part; the bundled entrypoint would train "
                                  "on every group: set code.entry_point"))
    elif spec.code.wrap:
        out.append(problem(("code", "wrap"), "the wrap lays out the replicas of one instance type on every host; "
                                             "with compute.instance_groups your script runs unwrapped and picks "
                                             "its own strategy: remove code.wrap"))
    out += _strategy_problems(spec, seen, problem)
    for name, channel in spec.inputs.items():
        if channel.instance_groups is not None and channel.file_system is not None:
            out.append(problem(("inputs", name, "instance_groups"), "a file system is mounted on every host: "
                                                                   "instance_groups is for s3:// channels"))
    for at, names in named[1:]:
        for name in names or ():
            if name not in seen:
                out.append(problem(at, f"{name} is not a group of compute.instance_groups "
                                       f"({', '.join(sorted(seen))})"))
    return out


def _strategy_problems(spec: Any, groups: set[str], problem: Callable[[Path_, str], Problem]) -> list[Problem]:
    strategy, chosen = spec.distribution.strategy, spec.distribution.instance_groups
    at = ("distribution", "instance_groups")
    if strategy not in _ALLOWED:
        return [problem(("distribution", "strategy"), f"with compute.instance_groups SageMaker distributes to one "
                                                      f"group under mpirun only, not {strategy}: use horovod or smddp "
                                                      "(on the group distribution.instance_groups names), or none "
                                                      "(every host runs the script once)")]
    if strategy not in GROUP_STRATEGIES:
        if chosen is not None:
            return [problem(at, "a group gets a strategy under horovod or smddp only (SDK v2 refuses it otherwise): "
                                "set distribution.strategy, or remove distribution.instance_groups")]
        return []
    if chosen is None:
        if len(spec.compute.instance_groups) > 1:
            return [problem(at, f"{strategy} runs on one group: name it in distribution.instance_groups "
                                f"(one of {', '.join(sorted(groups))})")]
        return []
    if len(chosen) != 1:
        return [problem(at, f"{strategy} runs on one group: name one, not {len(chosen)}")]
    if chosen[0] not in groups:
        return [problem(at, f"{chosen[0]} is not a group of compute.instance_groups ({', '.join(sorted(groups))})")]
    return []
