"""`smtrain debug JOB`: the AWS CLI command that opens a shell on a running host of a job with remote debug on
(RemoteDebugConfig; compute.remote_debug in the spec).

SageMaker registers each host of such a job with AWS Systems Manager as the target
`sagemaker-training-job:<job>_<host>` (SageMaker developer guide, "Access a training container through AWS
Systems Manager for remote debugging"); `aws ssm start-session` with the Session Manager plugin opens the shell.
"""

from __future__ import annotations

import re
from typing import Any

from smtrain import exit_codes
from smtrain.errors import UserError

__all__ = ["debug_command", "ssm_target"]

_HOST = re.compile(r"algo-([1-9][0-9]*)")


def ssm_target(job: str, host: str) -> str:
    return f"sagemaker-training-job:{job}_{host}"


def debug_command(description: dict[str, Any], host: str, region: str) -> list[str]:
    """The command line that opens a shell on `host` of the described job; UserError (exit 2) when the job has
    remote debug off, is not running, or has no such host."""
    name = description["TrainingJobName"]
    if not (description.get("RemoteDebugConfig") or {}).get("EnableRemoteDebug"):
        raise UserError(f"{name} was started without remote debug: set compute.remote_debug: true in its spec and "
                        "submit it again", exit_codes.USAGE)
    status = description.get("TrainingJobStatus")
    if status != "InProgress":
        raise UserError(f"{name} is {status}: a shell needs a running job", exit_codes.USAGE)
    resources = description.get("ResourceConfig") or {}
    # A heterogeneous cluster's hosts are numbered across its instance groups.
    count = resources.get("InstanceCount") or sum(g.get("InstanceCount", 0) for g in resources.get(
        "InstanceGroups") or []) or 1
    match = _HOST.fullmatch(host)
    if match is None or int(match.group(1)) > count:
        hosts = ", ".join(f"algo-{i}" for i in range(1, min(count, 4) + 1)) + (", ..." if count > 4 else "")
        raise UserError(f"{name} has no host {host!r}: its hosts are {hosts}", exit_codes.USAGE)
    return ["aws", "ssm", "start-session", "--target", ssm_target(name, host), "--region", region]
