"""A local host gets what SageMaker's TensorFlow container toolkits compute from the same config files.

For several specs, every host's directory is laid out as a local run does it; then, in a fresh
process per host with SAGEMAKER_BASE_DIR pointing at that directory, the toolkit itself
(sagemaker-training's Environment, sagemaker-tensorflow-training's TF_CONFIG builders) says what
it would export. The environment must match exactly, and TF_CONFIG must match except host:port.
And for every strategy, each host starts the processes the toolkit's own `train` starts there: the
entry point (as master, worker or under mpirun) and, for parameter server, a bare tf.distribute.Server.

Needs the test dependencies sagemaker-training and sagemaker-tensorflow-training (installed with
--no-deps: their pins would downgrade numpy and protobuf under TensorFlow).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from smtrain.local.contract import TF_FRAMEWORK_MODULE
from smtrain.local.hosts import Hosts, lay_out, write_bundle
from smtrain.local.launch import host_processes
from smtrain.local.ports import Reserved
from smtrain.local.request import local_request, render_local
from smtrain.plan import launch
from tests.local.support import make_plan

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sagemaker_training") is None
    or importlib.util.find_spec("sagemaker_tensorflow_container") is None,
    reason="needs the test dependencies sagemaker-training and sagemaker-tensorflow-training")

# Run by the toolkit's own code, in a process of its own: its environment module fixes its paths
# from SAGEMAKER_BASE_DIR at import.
TOOLKIT = r"""
import json, sys, types
# The TF_CONFIG builders are plain Python; the module imports TensorFlow only to run ps servers.
sys.modules["tensorflow"] = types.ModuleType("tensorflow")
from sagemaker_training import environment
from sagemaker_tensorflow_container import training

env = environment.Environment(hyperparameters=environment.read_hyperparameters())
hosts, current = env.distribution_hosts, env.current_host
out = {"env": env.to_env_vars(), "args": env.to_cmd_args(), "mwms": None, "ps": None, "ps_task": None}
if hosts:
    out["mwms"] = training._build_tf_config_for_mwms(hosts=hosts, current_host=current)
    out["ps"] = training._build_tf_config_for_ps(hosts=hosts, current_host=current)
    if len(hosts) > 1:
        out["ps_task"] = training._build_tf_config_for_ps(hosts=hosts, current_host=current, ps_task=True)
json.dump(out, sys.stdout)
"""

SPECS: dict[str, dict[str, Any]] = {
    "single-host": {"compute": {"instance_type": "ml.g5.xlarge"},
                    "hyperparameters": {"mode": "ok", "flag": True, "ratio": 0.25},
                    "environment": {"MY_SETTING": "1"}},
    "mwms-2": {"compute": {"nodes": 2}, "distribution": {"strategy": "multi_worker_mirrored"}},
    "parameter-server-3": {"compute": {"nodes": 3}, "distribution": {"strategy": "parameter_server"}},
    "horovod-2": {"tensorflow": {"version": "2.12"}, "compute": {"nodes": 2, "instance_type": "ml.p4d.24xlarge"},
                  "distribution": {"strategy": "horovod", "processes_per_host": 2,
                                   "mpi_options": "-x HOROVOD_FUSION_THRESHOLD=1"}},
    "smddp-2": {"tensorflow": {"version": "2.11"}, "compute": {"nodes": 2, "instance_type": "ml.p4d.24xlarge"},
                "distribution": {"strategy": "smddp"}},
}


def laid_out(tmp_path: Path, changes: dict[str, Any]) -> tuple[Any, Hosts]:
    for name in ("train", "validation"):
        (tmp_path / "data" / name).mkdir(parents=True, exist_ok=True)
    plan = make_plan(tmp_path, {**changes, "inputs": {"train": "data/train",
                                                      "validation": {"uri": "data/validation", "mode": "FastFile"}}})
    request = local_request(plan, "conformance-job-1")
    body = render_local(request)
    bundle = tmp_path / "bundle.tar.gz"
    write_bundle(request.bundle.data, bundle)
    hosts = lay_out(request.job_name, plan.region, body, body["HyperParameters"], tmp_path / "hosts", bundle)
    return plan, hosts


def toolkit_view(hosts: Hosts, host: str) -> dict[str, Any]:
    """What the toolkit computes on `host`, from that host's config files (a clean environment)."""
    env = {"PATH": os.environ.get("PATH", ""), "SAGEMAKER_BASE_DIR": str(hosts.layouts[host].base),
           "TRAINING_JOB_NAME": hosts.job_name, "SAGEMAKER_TRAINING_MODULE": TF_FRAMEWORK_MODULE,
           "AWS_EC2_METADATA_DISABLED": "true", "HOME": os.environ.get("HOME", "/")}
    out = subprocess.run([sys.executable, "-c", TOOLKIT], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def same_but_address(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Equal TF_CONFIG but for the addresses, which here are distinct 127.0.0.1 ports."""
    assert ours["task"] == theirs["task"] and ours.get("environment") == theirs.get("environment")
    assert ours["cluster"].keys() == theirs["cluster"].keys()
    addresses = [a for job in ours["cluster"].values() for a in job]
    assert all(a.startswith("127.0.0.1:") for a in addresses) and len(set(addresses)) == len(addresses)
    for job, listed in theirs["cluster"].items():
        assert len(ours["cluster"][job]) == len(listed), job


@pytest.mark.parametrize("case", list(SPECS))
def test_environment_and_arguments_match_the_toolkit(tmp_path: Path, case: str) -> None:
    plan, hosts = laid_out(tmp_path, SPECS[case])
    for host in hosts.names:
        theirs = toolkit_view(hosts, host)
        ours = hosts.toolkit_env(host)
        assert ours == theirs["env"], host
        process_env = hosts.env_for(host, None)
        assert {k: process_env[k] for k in ours} == ours  # nothing later overrides them
        assert process_env["SAGEMAKER_BASE_DIR"] == str(hosts.layouts[host].base)
        assert hosts.args_for(host) == theirs["args"]
        assert process_env["SM_NUM_GPUS"] == "0" or process_env["SM_NUM_GPUS"] == theirs["env"]["SM_NUM_GPUS"]
    if case == "horovod-2":
        # SageMaker passes model_dir=/opt/ml/model for MPI jobs; a local host reads its own model dir.
        args = hosts.args_for("algo-1")
        assert args[args.index("--model_dir") + 1] == str(hosts.layouts["algo-1"].model_dir)
    if case == "single-host":
        assert hosts.env_for("algo-1", None)["MY_SETTING"] == "1"


@pytest.mark.parametrize("case", ["mwms-2", "parameter-server-3"])
def test_tf_config_matches_the_toolkits_builders_except_host_and_port(tmp_path: Path, case: str) -> None:
    plan, hosts = laid_out(tmp_path, SPECS[case])
    specs = host_processes(plan.strategy, hosts.names, {h: hosts.layouts[h].code_dir for h in hosts.names},
                           hosts.env_for, entry_point=plan.entry_point, python=sys.executable,
                           args_for=hosts.args_for, processes_per_host=plan.processes_per_host, mpi_options="",
                           ports=Reserved())
    seen: dict[str, str] = {}  # one address per cluster member, the same in every process's TF_CONFIG
    for host in hosts.names:
        theirs = toolkit_view(hosts, host)
        mine = [json.loads(s.env["TF_CONFIG"]) for s in specs if s.host == host]
        if case == "mwms-2":
            [tf] = mine
            same_but_address(tf, theirs["mwms"])
        else:
            ps = [tf for tf in mine if tf["task"]["type"] == "ps"]
            main = [tf for tf in mine if tf["task"]["type"] != "ps"]
            assert len(ps) == 1 and len(main) == 1
            same_but_address(ps[0], theirs["ps_task"])
            same_but_address(main[0], theirs["ps"])
        for tf in mine:
            for job, listed in tf["cluster"].items():
                for index, address in enumerate(listed):
                    assert seen.setdefault(f"{job}:{index}", address) == address


# The smdataparallel runner's command, built by the toolkit itself on the first host.
SMDDP_RUNNER = r"""
import json, sys
from sagemaker_training import environment, process, smdataparallel

env = environment.Environment(hyperparameters=environment.read_hyperparameters())
runner = smdataparallel.SMDataParallelRunner(
    env.user_entry_point, env.to_cmd_args(), env.to_env_vars(), int(sys.argv[1]), env.master_hostname,
    env.distribution_hosts, sys.argv[2], env.network_interface_name)
command = runner._create_command() + process.ProcessRunner._create_command(runner)
json.dump({"command": command, "args": env.to_cmd_args()}, sys.stdout)
"""


@pytest.mark.parametrize("nodes", [1, 2])
def test_smddp_launch_preview_is_the_toolkits_smddprun_line(tmp_path: Path, nodes: int) -> None:
    # A stand-in `smddprun` on PATH: the toolkit adds it to the line only where the image has one.
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "smddprun").write_text("#!/bin/sh\n")
    (fake_bin / "smddprun").chmod(0o755)
    changes = {**SPECS["smddp-2"], "compute": {"nodes": nodes, "instance_type": "ml.p4d.24xlarge"},
               "distribution": {"strategy": "smddp", "mpi_options": "--NCCL_DEBUG WARN -x MY_FLAG=1"}}
    plan, hosts = laid_out(tmp_path, changes)
    env = {"PATH": f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}", "AWS_EC2_METADATA_DISABLED": "true",
           "SAGEMAKER_BASE_DIR": str(hosts.layouts["algo-1"].base), "TRAINING_JOB_NAME": hosts.job_name,
           "SAGEMAKER_TRAINING_MODULE": TF_FRAMEWORK_MODULE, "HOME": os.environ.get("HOME", "/")}
    out = subprocess.run([sys.executable, "-c", SMDDP_RUNNER, str(plan.processes_per_host),
                          plan.spec.distribution.mpi_options], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    theirs = json.loads(out.stdout)["command"]
    program = [plan.entry_point, *launch.hyperparameter_args(plan.hyperparameters)]
    preview = launch.smddprun_command(hosts.names, plan.processes_per_host, plan.instance.name,
                                      plan.spec.distribution.mpi_options, program)
    assert plan.launch[0].command == preview and all(h.command is None for h in plan.launch[1:])
    # A local layout names the loopback interface where SageMaker's hosts have eth0.
    interface = theirs[theirs.index("btl_tcp_if_include") + 1]
    ours = launch.smddprun_command(hosts.names, plan.processes_per_host, plan.instance.name,
                                   plan.spec.distribution.mpi_options, program, interface=interface)
    # The same line up to the program's arguments (a local layout makes the toolkit's differ: its
    # model_dir), but for what depends on the image: the preloaded library's path and the python.
    preload = next(i for i, word in enumerate(theirs) if word.startswith("LD_PRELOAD="))
    theirs[preload] = ours[preload]
    python = theirs.index("smddprun") + 1
    assert theirs[python] == sys.executable
    theirs[python] = "python"
    program = ours.index(plan.entry_point) + 1
    assert ours[:program] == theirs[:program]


# What the toolkit starts on one host, found by running its own `train` (sagemaker-tensorflow-training) with
# the two calls that start something replaced by recorders: `entry_point.run` (the user's program, through
# the runner sagemaker-training picks) and `multiprocessing.Process` (the ps server's process). TensorFlow is a
# stand-in that records the tf.distribute.Server it is asked for; `curl` to the master says it is down.
STARTED_BY_TOOLKIT = r"""
import json, subprocess, sys, types

started, servers = [], []


class Config:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class Server:
    def __init__(self, cluster, job_name, task_index, config=None, **kwargs):
        servers.append({"program": "tf.distribute.Server", "job_name": job_name, "task_index": task_index,
                        "cluster": sorted(cluster), "gpus": (config.kwargs.get("device_count") or {}).get("GPU")})

    def join(self):
        pass


tf = types.ModuleType("tensorflow")
tf.train = types.SimpleNamespace(ClusterSpec=lambda cluster: cluster)
tf.compat = types.SimpleNamespace(v1=types.SimpleNamespace(ConfigProto=Config))
tf.distribute = types.SimpleNamespace(Server=Server)
sys.modules["tensorflow"] = tf
if sys.argv[1:] == ["ours"]:  # smtrain's ps program, under the same stand-in
    exec(sys.stdin.read())
    json.dump(servers, sys.stdout)
    raise SystemExit(0)

from sagemaker_training import environment, mapping, mpi, process, runner, smdataparallel
from sagemaker_tensorflow_container import training


class Process:  # multiprocessing.Process: its target runs in a process of its own
    def __init__(self, target):
        self.target = target

    def start(self):
        count = len(servers)
        self.target()
        started.append(servers[count - 1])


def run(uri, user_entry_point, args, env_vars=None, capture_error=False, runner_type=runner.ProcessRunnerType,
        extra_opts=None):
    chosen = runner.get(runner_type, user_entry_point, args, env_vars, extra_opts)
    if isinstance(chosen, mpi.WorkerRunner):
        return  # starts nothing: it waits while the master's mpirun runs this host's ranks
    task = json.loads(env_vars["TF_CONFIG"])["task"] if "TF_CONFIG" in env_vars else None
    command = chosen._create_command()
    if isinstance(chosen, smdataparallel.SMDataParallelRunner):  # its run() appends the program so
        command += process.ProcessRunner._create_command(chosen)
    started.append({"program": command, "tf_config_task": task})


def master_is_down(*args, **kwargs):
    raise subprocess.CalledProcessError(7, args[0])


training.entry_point.run = run
training.multiprocessing.Process = Process
training.subprocess.check_call = master_is_down
env = environment.Environment(hyperparameters=environment.read_hyperparameters())
training.train(env, mapping.to_cmd_args(env.hyperparameters))
json.dump(started, sys.stdout)
"""

PROCESS_CASES = {
    "single-host": SPECS["single-host"],
    "mirrored": {"compute": {"instance_type": "ml.g5.12xlarge"}, "distribution": {"strategy": "mirrored"}},
    "mwms-2": SPECS["mwms-2"],
    "parameter-server-3": SPECS["parameter-server-3"],
    "horovod-2": SPECS["horovod-2"],
    "smddp-2": SPECS["smddp-2"],
}


def run_stand_in(env: dict[str, str], *args: str, stdin: str | None = None) -> Any:
    out = subprocess.run([sys.executable, "-c", STARTED_BY_TOOLKIT, *args], env=env, input=stdin,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def toolkit_processes(hosts: Hosts, host: str, bin_dir: Path) -> list[dict[str, Any]]:
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "SAGEMAKER_BASE_DIR": str(hosts.layouts[host].base),
           "TRAINING_JOB_NAME": hosts.job_name, "SAGEMAKER_TRAINING_MODULE": TF_FRAMEWORK_MODULE,
           "AWS_EC2_METADATA_DISABLED": "true", "HOME": os.environ.get("HOME", "/")}
    return run_stand_in(env)


def local_processes(specs: list[Any], host: str) -> list[dict[str, Any]]:
    """A local host's processes in the toolkit's terms: the ps server it asks TensorFlow for, or the command."""
    from smtrain.local.launch import PS_SERVER

    found: list[dict[str, Any]] = []
    for spec in (s for s in specs if s.host == host):
        if spec.argv[1:] == ["-c", PS_SERVER]:
            [server] = run_stand_in({"PATH": os.environ.get("PATH", ""), "TF_CONFIG": spec.env["TF_CONFIG"]},
                                    "ours", stdin=PS_SERVER)
            found.append({**server, "role": spec.role})
            continue
        task = json.loads(spec.env["TF_CONFIG"])["task"] if "TF_CONFIG" in spec.env else None
        found.append({"program": spec.argv, "tf_config_task": task, "role": spec.role})
    return found


def rank_program(command: list[str]) -> list[str]:
    """An mpirun line's program and what it runs per rank (options differ: loopback here, eth0 there)."""
    rank = command.index("mpi4py") - 2
    return [Path(command[0]).name, *command[rank:]]


@pytest.mark.parametrize("case", list(PROCESS_CASES))
def test_each_host_starts_the_toolkits_processes(tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Which processes run, not whether Horovod is installed here: that check has tests of its own.
    monkeypatch.setattr("smtrain.local.launch.check_mpi", lambda strategy, python: "mpirun")
    bin_dir = tmp_path / "bin"  # smddp's runner names smddprun only where the image has it
    bin_dir.mkdir()
    (bin_dir / "smddprun").write_text("#!/bin/sh\n")
    (bin_dir / "smddprun").chmod(0o755)
    plan, hosts = laid_out(tmp_path, PROCESS_CASES[case])
    specs = host_processes(plan.strategy, hosts.names, {h: hosts.layouts[h].code_dir for h in hosts.names},
                           hosts.env_for, entry_point=plan.entry_point, python=sys.executable,
                           args_for=hosts.args_for, processes_per_host=plan.processes_per_host,
                           mpi_options=plan.spec.distribution.mpi_options, ports=Reserved())
    for host in hosts.names:
        theirs = toolkit_processes(hosts, host, bin_dir)
        ours = local_processes(specs, host)
        assert len(ours) == len(theirs), (host, ours, theirs)
        for mine, toolkit in zip(ours, theirs, strict=True):
            role = mine.pop("role")
            if toolkit["program"] == "tf.distribute.Server":
                assert mine == toolkit and role == "aux", host  # the user's code never runs as the ps task
                continue
            assert role == "main" and mine["tf_config_task"] == toolkit["tf_config_task"], host
            if case in ("horovod-2", "smddp-2"):
                program = rank_program(toolkit["program"])
                program[program.index("python") if "python" in program else 1] = sys.executable
                if "smddprun" in program:  # smddprun wraps each rank in the image; no such program here
                    program.remove("smddprun")
                assert rank_program(mine["program"]) == program, host
            else:
                assert mine["program"] == toolkit["program"], host
    if case == "parameter-server-3":
        assert [s.name for s in specs][:2] == ["algo-1/ps", "algo-1"]  # each host's server before its worker
