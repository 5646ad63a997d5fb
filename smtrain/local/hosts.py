"""Lay out a local job's hosts: one /opt/ml-like directory each, and each host's environment.

From the rendered CreateTrainingJob request: every host gets the bundle unpacked as its code
directory, hyperparameters.json (the request's HyperParameters), resourceconfig.json and
inputdataconfig.json, and the environment the toolkit would export there.
"""

from __future__ import annotations

import json
import os
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smtrain.local.contract import (
    HostLayout,
    Machine,
    decode_hyperparameters,
    input_data_config,
    process_environment,
    resource_config,
    toolkit_environment,
    user_arguments,
    write_config_files,
)
from smtrain.plan import launch

# Every local host is this machine; its traffic goes over loopback.
NETWORK_INTERFACE = "lo"


@dataclass(frozen=True)
class Hosts:
    """The laid-out hosts of one job, and what a process on each of them gets."""

    job_name: str
    region: str | None
    layouts: dict[str, HostLayout]
    hyperparameters: dict[str, dict[str, str]]  # per host, JSON-encoded as in hyperparameters.json
    resources: dict[str, dict[str, Any]]  # per host: resourceconfig.json
    channels: dict[str, dict[str, str]]  # inputdataconfig.json
    container_env: dict[str, str]  # the request's Environment
    machine: Machine
    base_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ), repr=False)

    @property
    def names(self) -> list[str]:
        return list(self.layouts)

    def toolkit_env(self, host: str) -> dict[str, str]:
        return toolkit_environment(self.layouts[host], self.hyperparameters[host], self.resources[host],
                                   self.channels, self.machine, job_name=self.job_name)

    def env_for(self, host: str, tf_config: dict[str, Any] | None) -> dict[str, str]:
        return process_environment(self.base_env, self.toolkit_env(host), self.container_env, self.layouts[host],
                                   job_name=self.job_name, region=self.region, tf_config=tf_config)

    def args_for(self, host: str) -> list[str]:
        return user_arguments(self.hyperparameters[host])


def _rebased(hyperparameters: Mapping[str, str], layout: HostLayout) -> dict[str, str]:
    """Values naming a place under /opt/ml (Horovod's model_dir) point into the host's directory."""
    out = {}
    for name, encoded in hyperparameters.items():
        value = decode_hyperparameters({name: encoded})[name]
        out[name] = json.dumps(layout.rebase(value)) if isinstance(value, str) and value != layout.rebase(value) \
            else encoded
    return out


def write_bundle(data: bytes, path: Path) -> None:
    """The bundle at `path` (unchanged if it is there already: its name holds its digest)."""
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:  # a full disk, a file-size limit, a signal: no partial bundle is left
        tmp.unlink(missing_ok=True)
        raise


def unpack(bundle: Path, target: Path) -> None:
    with tarfile.open(bundle, "r:gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(target, filter="data")
        else:  # pragma: no cover - Pythons without extraction filters; the bundle is our own
            tar.extractall(target)  # noqa: S202


def lay_out(job_name: str, region: str | None, request: Mapping[str, Any], hyperparameters: Mapping[str, str],
            hosts_dir: Path, bundle: Path, machine: Machine | None = None,
            environment: Mapping[str, str] | None = None, python_path: Sequence[str] = ()) -> Hosts:
    """Create every host's directory from the rendered `request`, with `hyperparameters` as the job's and
    `environment` as the container's (default: the request's Environment); `python_path` goes on the hosts'
    PYTHONPATH after the code directory (local-run hooks)."""
    names = launch.host_names(request["ResourceConfig"]["InstanceCount"])
    instance_type = request["ResourceConfig"]["InstanceType"]
    channels = input_data_config(request)
    layouts, hps, resources = {}, {}, {}
    for host in names:
        layout = layouts[host] = HostLayout(hosts_dir / host)
        layout.create()
        unpack(bundle, layout.code_dir)
        hps[host] = _rebased(hyperparameters, layout)
        resources[host] = resource_config(names, host, instance_type, NETWORK_INTERFACE)
        write_config_files(layout, hps[host], resources[host], channels)
    base_env = dict(os.environ)
    if python_path:
        base_env["PYTHONPATH"] = os.pathsep.join([*python_path, *filter(None, [base_env.get("PYTHONPATH")])])
    return Hosts(job_name=job_name, region=region, layouts=layouts, hyperparameters=hps, resources=resources,
                 channels=channels, base_env=base_env,
                 container_env=dict(request.get("Environment") or {} if environment is None else environment),
                 machine=machine or Machine.here())
