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


LIBRARY_PROBE = """
import json, sys
import smtrain
smtrain.__all__, dir(smtrain)
%s
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(%r))
sys.stderr.write("HEAVY=" + json.dumps(heavy) + "\\n")
"""


@pytest.mark.parametrize("calls", [
    "",  # `import smtrain` alone
    "smtrain.SpecError, smtrain.UserError, smtrain.Job",
    "smtrain.validate('configs/mwms.yaml'); print(smtrain.plan('configs/horovod.yaml').plan.replicas)",
])
def test_the_library_imports_nothing_heavy_until_a_call_needs_it(calls):
    # The library's names are the CLI's fast paths too (issue 24): importing smtrain, its exceptions and Job,
    # validating and planning load no SDK, boto3, botocore or TensorFlow.
    proc = subprocess.run([sys.executable, "-c", LIBRARY_PROBE % (calls, HEAVY + ("nbformat", "IPython"))],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    line = [x for x in proc.stderr.splitlines() if x.startswith("HEAVY=")]
    assert line, proc.stderr
    assert json.loads(line[0][6:]) == [], f"{calls!r} imported {line[0]}"


def test_a_dry_run_from_the_library_loads_no_sdk_or_tensorflow():
    # boto3's own data is read for the request's limits, as `submit --dry-run` does; no SDK, no TensorFlow.
    proc = subprocess.run([sys.executable, "-c", LIBRARY_PROBE % (
        "smtrain.dry_run('configs/mwms.yaml')", ("sagemaker", "tensorflow", "IPython"))],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    line = [x for x in proc.stderr.splitlines() if x.startswith("HEAVY=")]
    assert line and json.loads(line[0][6:]) == [], proc.stderr[-2000:]
