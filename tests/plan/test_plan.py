"""Distribution rules, strategy resolution, the batch/LR maths, launch preview and cost."""

from __future__ import annotations

import json

import pytest

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.specfiles import write_spec

CATALOG = load_catalog()


def plan_for(tmp_path, changes):
    return build_plan(load_spec(write_spec(tmp_path, changes), env={}), CATALOG)


def refused(tmp_path, changes) -> list[str]:
    with pytest.raises(SpecError) as info:
        plan_for(tmp_path, changes)
    return [p.render() for p in info.value.problems]


# --- strategy auto -----------------------------------------------------------------------------

def test_auto_one_gpu_is_none(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}})
    assert plan.strategy == "none" and plan.distribution is None and plan.replicas == 1


def test_auto_one_node_several_gpus_is_mirrored(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge"}})
    assert plan.strategy == "mirrored" and plan.replicas == 4 and plan.distribution is None


def test_auto_several_nodes_is_mwms(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.p4d.24xlarge", "nodes": 2}})
    assert plan.strategy == "multi_worker_mirrored"
    assert plan.distribution == {"multi_worker_mirrored_strategy": {"enabled": True}}
    assert plan.replicas == 16


# --- SDK distribution dicts ----------------------------------------------------------------------

def test_horovod_dict_and_processes_default_to_gpus(tmp_path):
    plan = plan_for(tmp_path, {"tensorflow": {"version": "2.12"}, "compute": {"instance_type": "ml.g5.12xlarge",
                               "nodes": 2}, "distribution": {"strategy": "horovod", "mpi_options": "-x A=1"}})
    assert plan.distribution == {"mpi": {"enabled": True, "processes_per_host": 4, "custom_mpi_options": "-x A=1"}}
    assert plan.replicas == 8


def test_smddp_dict(tmp_path):
    plan = plan_for(tmp_path, {"tensorflow": {"version": "2.11"}, "compute": {"instance_type": "ml.p4d.24xlarge"},
                               "distribution": {"strategy": "smddp"}})
    assert plan.distribution == {"smdistributed": {"dataparallel": {"enabled": True, "custom_mpi_options": ""}}}


def test_parameter_server_dict(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2},
                               "distribution": {"strategy": "parameter_server"}})
    assert plan.distribution == {"parameter_server": {"enabled": True}}


# --- refusals: each says what to do instead --------------------------------------------------------

def test_smddp_refuses_new_tensorflow(tmp_path):
    out = refused(tmp_path, {"tensorflow": {"version": "2.13"}, "compute": {"instance_type": "ml.p4d.24xlarge"},
                             "distribution": {"strategy": "smddp"}})
    assert any("2.3 to 2.11 only, not 2.13" in p and "use multi_worker_mirrored" in p for p in out)


def test_smddp_refuses_tensorflow_older_than_its_first_image(tmp_path):
    (tmp_path / "train.py").write_text("")
    out = refused(tmp_path, {"tensorflow": {"version": "2.2", "image_uri": "123.dkr.ecr.us-east-1.amazonaws.com/tf:1"},
                             "compute": {"instance_type": "ml.p4d.24xlarge"}, "distribution": {"strategy": "smddp"},
                             "code": {"entry_point": "train.py", "source_dir": "."}})
    assert any("distribution.strategy" in p and "2.3 to 2.11 only, not 2.2" in p for p in out)


@pytest.mark.parametrize("version", ["2.13", "2.16", "2.19"])
def test_horovod_refused_on_images_without_horovod(tmp_path, version):
    out = refused(tmp_path, {"tensorflow": {"version": version}, "compute": {"instance_type": "ml.g5.12xlarge"},
                             "distribution": {"strategy": "horovod"}})
    [line] = [p for p in out if "no Horovod" in p]
    assert line.startswith(str(tmp_path / "job.yaml") + ":") and "distribution.strategy" in line
    assert "multi_worker_mirrored" in line


def test_horovod_on_a_new_version_is_allowed_with_an_image_of_your_own(tmp_path):
    plan = plan_for(tmp_path, {"tensorflow": {"version": "2.16", "image_uri": "123.dkr.ecr.us-east-1.amazonaws.com/hvd:1"},
                               "compute": {"instance_type": "ml.g5.12xlarge"}, "distribution": {"strategy": "horovod"}})
    assert plan.strategy == "horovod" and plan.image_uri


@pytest.mark.parametrize("strategy, nodes, warned", [("none", 2, True), ("none", 1, False),
                                                     ("multi_worker_mirrored", 2, False)])
def test_strategy_none_on_several_nodes_is_told_each_trains_alone(tmp_path, strategy, nodes, warned):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": nodes},
                               "distribution": {"strategy": strategy}})
    told = [w.message for w in plan.warnings if w.message.startswith("strategy none")]
    assert told == ([f"strategy none: each of the {nodes} nodes trains on its own"] if warned else [])


@pytest.mark.parametrize("instance", ["ml.p5.48xlarge", "ml.g5.48xlarge", "ml.p3.8xlarge"])
def test_smddp_refuses_other_instances(tmp_path, instance):
    out = refused(tmp_path, {"tensorflow": {"version": "2.11"}, "compute": {"instance_type": instance},
                             "distribution": {"strategy": "smddp"}})
    assert any("compute.instance_type" in p and f"does not run on {instance}" in p
               and "ml.p4d.24xlarge" in p for p in out)


def test_smddp_auto_picks_from_its_list(tmp_path):
    plan = plan_for(tmp_path, {"tensorflow": {"version": "2.11"}, "compute": {"gpus_per_node": 8},
                               "distribution": {"strategy": "smddp"}})
    assert plan.instance.name in ("ml.p3.16xlarge", "ml.p3dn.24xlarge", "ml.p4d.24xlarge", "ml.p4de.24xlarge")
    assert "smddp" in plan.instance_reason


def test_mwms_refuses_old_tensorflow(tmp_path):
    out = refused(tmp_path, {"tensorflow": {"version": "2.8"}, "compute": {"instance_type": "ml.g5.xlarge",
                             "nodes": 2}, "distribution": {"strategy": "multi_worker_mirrored"}})
    assert any("2.9 or later" in p for p in out)


def test_mirrored_refuses_several_nodes(tmp_path):
    out = refused(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2},
                             "distribution": {"strategy": "mirrored"}})
    assert any("use multi_worker_mirrored" in p for p in out)


def test_processes_per_host_above_gpus(tmp_path):
    out = refused(tmp_path, {"tensorflow": {"version": "2.13"}, "compute": {"instance_type": "ml.g5.12xlarge"},
                             "distribution": {"strategy": "horovod", "processes_per_host": 8}})
    assert any("distribution.processes_per_host" in p and "at most 4" in p for p in out)


def test_unknown_tf_version_needs_image_uri(tmp_path):
    out = refused(tmp_path, {"tensorflow": {"version": "2.20"}, "compute": {"instance_type": "ml.g5.xlarge"}})
    assert any("no TensorFlow 2.20 training image" in p and "image_uri" in p for p in out)
    plan = plan_for(tmp_path, {"tensorflow": {"version": "2.20", "image_uri": "example.invalid/tf:2.20-gpu"},
                               "compute": {"instance_type": "ml.g5.xlarge"}})
    assert plan.framework_version == "2.20" and plan.image_uri == "example.invalid/tf:2.20-gpu"


def test_python_inferred_and_checked(tmp_path):
    assert plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}).py_version == "py312"
    out = refused(tmp_path, {"tensorflow": {"version": "2.19", "python": "py38"},
                             "compute": {"instance_type": "ml.g5.xlarge"}})
    assert any("tensorflow.python" in p for p in out)


def test_parameter_server_needs_two_nodes(tmp_path):
    out = refused(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                             "distribution": {"strategy": "parameter_server"}})
    assert any("2 or more" in p for p in out)


def test_unknown_instance_names_nearest(tmp_path):
    out = refused(tmp_path, {"compute": {"instance_type": "ml.p4.24xlarge"}})
    assert any("compute.instance_type" in p and "ml.p4d.24xlarge" in p for p in out)


def test_no_instance_matches(tmp_path):
    out = refused(tmp_path, {"compute": {"gpu": "A100", "gpus_per_node": 16}})
    assert len(out) == 1 and "compute" in out[0]


# --- warnings --------------------------------------------------------------------------------------

def test_warns_parameter_server_on_multi_gpu(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2},
                               "distribution": {"strategy": "parameter_server"}})
    assert any("parameter servers over the network" in w.render() for w in plan.warnings)
    assert plan.replicas == 4  # mirrored over the 4 GPUs of each worker, as the entrypoint does


def test_warns_multi_node_without_efa(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2}})
    assert any("no EFA" in w.render() for w in plan.warnings)
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.p4d.24xlarge", "nodes": 2}})
    assert not any("no EFA" in w.render() for w in plan.warnings)


# --- the numbers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("scaling, expected", [("none", 0.001), ("linear", 0.016), ("sqrt", 0.004)])
def test_batch_and_learning_rate(tmp_path, scaling, expected):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.48xlarge", "nodes": 2},
                               "training": {"batch_size_per_replica": 32, "lr_scaling": scaling}})
    assert plan.replicas == 16 and plan.global_batch == 512
    assert plan.scaled_learning_rate == pytest.approx(expected)


def test_cost(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 3, "max_run": "2h",
                                           "spot": True, "max_wait": "4h"}, "checkpoints": "s3://my-bucket/c"})
    price = CATALOG.get("ml.g5.xlarge").price_per_hour
    assert plan.cost.per_hour == pytest.approx(3 * price)
    assert plan.cost.max_for_run == pytest.approx(6 * price)
    assert plan.cost.spot_per_hour_estimate < plan.cost.per_hour


def test_launch_preview_mwms_matches_toolkit_shape(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 3}})
    configs = [h.tf_config for h in plan.launch]
    assert configs[2] == {"cluster": {"worker": ["algo-1:8890", "algo-2:8890", "algo-3:8890"]},
                          "environment": "cloud", "task": {"index": 2, "type": "worker"}}
    assert plan.launch[0].command[:2] == ["python", "smtrain_entry.py"]
    assert "--epochs" in plan.launch[0].command


def test_launch_preview_parameter_server(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 3},
                               "distribution": {"strategy": "parameter_server"}})
    first, second = plan.launch[0], plan.launch[1]
    assert first.tf_config["task"] == {"index": 0, "type": "master"}
    assert second.tf_config["task"] == {"index": 0, "type": "worker"}
    assert first.tf_config["cluster"] == {"master": ["algo-1:2222"], "ps": ["algo-1:2223", "algo-2:2223", "algo-3:2223"],
                                          "worker": ["algo-2:2222", "algo-3:2222"]}
    assert plan.launch[2].tf_config["task"] == {"index": 1, "type": "worker"}
    assert second.ps_tf_config["task"] == {"index": 1, "type": "ps"}


def test_launch_preview_mpirun(tmp_path):
    plan = plan_for(tmp_path, {"tensorflow": {"version": "2.12"},
                               "compute": {"instance_type": "ml.p4d.24xlarge", "nodes": 2},
                               "distribution": {"strategy": "horovod", "mpi_options": "--NCCL_DEBUG WARN -x Z=1"}})
    cmd = plan.launch[0].command
    assert cmd[:5] == ["mpirun", "--host", "algo-1:8,algo-2:8", "-np", "16"]
    assert "NCCL_DEBUG=WARN" in cmd and "FI_PROVIDER=efa" in cmd and "FI_EFA_USE_DEVICE_RDMA=1" in cmd
    assert cmd[cmd.index("-m") + 1] == "mpi4py"
    assert plan.launch[1].command is None and "algo-1" in plan.launch[1].note


def test_launch_preview_smddp_is_the_smddprun_line_not_horovods(tmp_path):
    # tests/local/test_conformance.py checks the whole line against the toolkit's own runner.
    plan = plan_for(tmp_path, {"tensorflow": {"version": "2.11"},
                               "compute": {"instance_type": "ml.p4d.24xlarge", "nodes": 2},
                               "distribution": {"strategy": "smddp"}})
    cmd = plan.launch[0].command
    assert cmd[:5] == ["mpirun", "--host", "algo-1:8,algo-2:8", "-np", "16"]
    assert cmd[cmd.index("smddprun") + 1:cmd.index("smddprun") + 4] == ["python", "-m", "mpi4py"]
    assert "SMDATAPARALLEL_USE_HOMOGENEOUS=1" in cmd and "SMDATAPARALLEL_SERVER_ADDR=algo-1" in cmd


def test_summary_is_json(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}})
    data = json.loads(json.dumps(plan.summary()))
    assert data["instance"]["type"] == "ml.g5.xlarge" and data["batch"]["global"] == 64


def test_whole_numbers_reach_the_entrypoint_as_written(tmp_path):
    plan = plan_for(tmp_path, {"training": {"warmup_epochs": 5, "learning_rate": 0.01}})
    assert plan.hyperparameters["warmup_epochs"] == 5 and isinstance(plan.hyperparameters["warmup_epochs"], int)
    assert plan.hyperparameters["learning_rate"] == 0.01
