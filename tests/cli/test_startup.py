"""Fast paths must not import sagemaker, boto3 or tensorflow (the SDK alone takes seconds to load)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import ROOT

HEAVY = ("sagemaker", "boto3", "botocore", "tensorflow")

PROBE = """
import json, sys
from smtrain.cli.commands import main
try:
    main(sys.argv[1:], prog_name="smtrain")
except SystemExit as exc:
    code = exc.code
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(%r))
sys.stderr.write("HEAVY=" + json.dumps(heavy) + "\\n")
"""


@pytest.mark.parametrize("args", [
    ["--help"],
    ["validate", "configs/mwms.yaml"],
    ["plan", "configs/horovod.yaml"],
    ["plan", "configs/parameter-server.yaml", "--output", "json"],
    ["instances", "--gpu", "A100"],
    ["schema"],
    ["submit", "--help"],
])
def test_fast_commands_import_nothing_heavy(args):
    proc = subprocess.run([sys.executable, "-c", PROBE % (HEAVY,), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    line = [x for x in proc.stderr.splitlines() if x.startswith("HEAVY=")]
    assert line, proc.stderr
    assert json.loads(line[0][6:]) == [], f"{args} imported {line[0]}"
