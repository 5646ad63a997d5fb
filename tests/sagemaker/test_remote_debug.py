"""`smtrain debug JOB`: the SSM command of a running host of a job with remote debug on, printed, or run when the
AWS CLI and its Session Manager plugin are on PATH (stand-ins here that record how they were called)."""

from __future__ import annotations

import json
import os
import stat

from tests.support import moto_server
from tests.support.cli_runner import smtrain


def _submitted(server, tmp_path, name, remote_debug=True, nodes=2):
    spec = moto_server.live_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": nodes,
                                                        "remote_debug": remote_debug}})
    proc = smtrain("submit", str(spec), "--job-name", name, env=server.env(tmp_path))
    assert proc.returncode == 0, proc.stderr


def test_the_command_for_each_host_and_what_is_refused(aws, tmp_path):
    _submitted(aws, tmp_path, "debug-me-1")
    env = aws.env(tmp_path, PATH=os.path.dirname(os.__file__))  # no aws, no plugin
    proc = smtrain("debug", "debug-me-1", "--host", "algo-2", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("aws ssm start-session --target sagemaker-training-job:debug-me-1_algo-2 "
                           "--region us-east-1\n")
    assert "install aws and session-manager-plugin" in proc.stderr
    document = json.loads(smtrain("debug", "debug-me-1", "-o", "json", env=env).stdout)
    assert document["command"][-3:] == ["sagemaker-training-job:debug-me-1_algo-1", "--region", "us-east-1"]
    for host in ("algo-3", "algo-0", "worker-1"):
        refused = smtrain("debug", "debug-me-1", "--host", host, env=env)
        assert refused.returncode == 2 and "its hosts are algo-1, algo-2" in refused.stderr, refused.stderr
    aws.set_status("debug-me-1", "Completed")
    ended = smtrain("debug", "debug-me-1", env=env)
    assert ended.returncode == 2 and "debug-me-1 is Completed: a shell needs a running job" in ended.stderr
    _submitted(aws, tmp_path, "no-debug-1", remote_debug=False)
    off = smtrain("debug", "no-debug-1", env=env)
    assert off.returncode == 2 and "started without remote debug" in off.stderr
    unknown = smtrain("debug", "nobody-1", env=env)
    assert unknown.returncode == 4


def test_with_the_aws_cli_and_its_plugin_present_it_runs_the_session(aws, tmp_path):
    _submitted(aws, tmp_path, "debug-me-2", nodes=1)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "called.txt"
    for tool in ("aws", "session-manager-plugin"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "$0 $*" > "{record}"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = aws.env(tmp_path, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = smtrain("debug", "debug-me-2", env=env, process=True)  # it execs the AWS CLI: a process of its own
    assert proc.returncode == 0, proc.stderr
    assert record.read_text() == (f"{bin_dir}/aws ssm start-session --target sagemaker-training-job:debug-me-2_algo-1 "
                                  "--region us-east-1\n")
    printed = smtrain("debug", "debug-me-2", "--print", env=env)
    assert printed.stdout.startswith("aws ssm start-session") and record.stat().st_size > 0
