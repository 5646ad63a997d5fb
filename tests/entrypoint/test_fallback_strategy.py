"""Issue 14: with compute.prefer one request serves every choice, and the container decides the strategy from
what it finds when the job starts. For two choices of one planned request, the entrypoint's own decision
(distribute/choice.py, no TensorFlow) on each one's hosts, GPUs and TF_CONFIG gives the strategy and replicas
`smtrain plan` shows for that choice."""

from __future__ import annotations

import json
from pathlib import Path

from smtrain_tf.contract import container
from smtrain_tf.distribute import choice as strategy_choice

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.render.training_request import preview_request
from smtrain.spec.model import load_spec
from tests.entrypoint.sagemaker_env import make_host, mwms_tf_config
from tests.support.specfiles import write_spec


def _contract(root: Path, request: dict, instance_type: str, nodes: int, gpus: int, *, named: bool) -> container.Contract:
    """Host algo-1 of the job as SageMaker starts it on `nodes` x `instance_type` (the toolkit's MWMS TF_CONFIG)."""
    sent = {k: json.loads(v) for k, v in request["HyperParameters"].items()}
    framework = {k: v for k, v in sent.items() if k.startswith("sagemaker_")}
    hps = {k: v for k, v in sent.items() if not k.startswith("sagemaker_") and k != "model_dir"}
    hosts = [f"algo-{i + 1}" for i in range(nodes)]
    mwms = framework.get(container.MWMS_FLAG)
    host = make_host(root, "algo-1", hosts, channels={}, hyperparameters=hps, framework_params=framework,
                     tf_config=mwms_tf_config([f"{h}:8890" for h in hosts], 0) if mwms else None,
                     suffix=f"-{instance_type}")
    host.env["SM_NUM_GPUS"] = str(gpus)
    config = host.base / "input" / "config" / "resourceconfig.json"
    if named:
        host.env["SM_CURRENT_INSTANCE_TYPE"] = instance_type
    else:  # the file alone, as a script started outside the toolkit finds it
        config.write_text(json.dumps({**json.loads(config.read_text()), "current_instance_type": instance_type}))
    return container.read(host.args, host.env)


def test_each_choice_of_one_request_decides_its_own_strategy(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"prefer": [{"instance_type": "ml.p4d.24xlarge", "count": 2},
                                                        {"instance_type": "ml.g5.12xlarge", "count": 1}]},
                                 "training": {"data": "synthetic"}})
    plan = build_plan(load_spec(spec, env={}), load_catalog())
    request = preview_request(plan)
    assert "InstanceType" not in request["ResourceConfig"]
    for index, choice in enumerate(plan.choices):
        contract = _contract(tmp_path, request, choice.instance.name, choice.nodes, choice.instance.gpus,
                             named=index == 0)
        assert contract.instance_type == choice.instance.name
        devices = strategy_choice.local_device_count(contract.num_gpus or 0, contract.hp("cpu_replicas"))
        decided = strategy_choice.decide(contract, devices)
        assert decided.kind == choice.strategy == strategy_choice.MWMS
        assert decided.role is not None and decided.role.num_trainers == choice.nodes
        # MultiWorkerMirrored's replicas: every worker's local devices.
        assert decided.role.num_trainers * devices == choice.replicas
        # The batch and rate follow at run time from those replicas (smtrain_tf/scaling.py, as the plan's).
        assert contract.hp("batch_size_per_replica") * choice.replicas == choice.global_batch


def test_one_node_choices_without_a_distribution_follow_the_gpus(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"prefer": [{"instance_type": "ml.g5.12xlarge"},
                                                        {"instance_type": "ml.g5.xlarge"}]},
                                 "training": {"data": "synthetic"}})
    plan = build_plan(load_spec(spec, env={}), load_catalog())
    request = preview_request(plan)
    kinds = {"mirrored": strategy_choice.MIRRORED, "none": strategy_choice.DEFAULT}
    for choice in plan.choices:
        contract = _contract(tmp_path, request, choice.instance.name, choice.nodes, choice.instance.gpus, named=True)
        decided = strategy_choice.decide(contract, strategy_choice.local_device_count(choice.instance.gpus, 0))
        assert decided.kind == kinds[choice.strategy] and decided.role is None
