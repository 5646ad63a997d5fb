"""docs/guides/moto.md, as a user follows it: `make moto`'s script (scripts/moto.sh) serves plain moto, no harness,
and the page's own shell block, read at test time, walks submit/list/status/wait/logs/metrics/stop against it."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, free_port
from tests.support.docs import page_text

pytestmark = pytest.mark.slow

DOC_PORT = "127.0.0.1:5000"  # the port the page shows: make moto's default


def _blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", page_text("guides/moto.md"), re.S)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_the_page_starts_moto_with_make_and_says_the_port() -> None:
    first, second, *_ = _blocks()
    assert first.startswith("make moto") and DOC_PORT in second
    assert '"${MOTO_PORT:-5000}"' in (ROOT / "scripts" / "moto.sh").read_text(encoding="utf-8")


def test_the_recipe_walks_a_job_against_plain_moto(tmp_path: Path) -> None:
    port = free_port()
    bin_dir = str(Path(sys.executable).parent)  # smtrain, moto_server and python3 as the venv has them
    env = {**os.environ, "MOTO_PORT": str(port), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_REGION"):
        env.pop(name, None)
    server = subprocess.Popen(["bash", str(ROOT / "scripts" / "moto.sh")], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        ready = server.stdout.readline()  # the script prints once the server answers and the bucket is made
        assert f"moto is serving on http://127.0.0.1:{port} with the bucket my-bucket" in ready, ready
        walk = _blocks()[1].replace(DOC_PORT, f"127.0.0.1:{port}")
        (tmp_path / "home").mkdir()
        ran = subprocess.run(["bash", "-euo", "pipefail", "-c", walk], cwd=tmp_path, capture_output=True, text=True,
                             timeout=300, env={**env, "HOME": str(tmp_path / "home")})
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
        out = ran.stdout + ran.stderr
        job = re.search(r"created training job (resnet-mirrored-\S+) in us-east-1", out)
        assert job, out
        # what the page says of plain moto: Completed at creation, no log lines, no metrics, nothing to stop
        assert f"{job.group(1)}: Completed" in out
        assert f"{job.group(1)} has no log lines (status Completed)" in out
        assert f"no metrics of {job.group(1)} (Completed)" in out
        assert f"{job.group(1)} had already ended (Completed): nothing to stop" in out
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C, as the page says
        server.wait(timeout=30)
    assert not _port_open(port)  # the script took its server down with it
