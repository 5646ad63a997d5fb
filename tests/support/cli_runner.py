"""Run the smtrain CLI as a user would: a separate process, real exit code, stdout and stderr apart."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.support import ROOT


def smtrain(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "smtrain", *args], cwd=cwd or ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def no_result(stdout: str) -> bool:
    """What a failing command leaves on stdout: nothing in text, else (-o json / -o yaml) only its failure
    document, `{"ok": false, "exit_code": N, ...}`, never a result."""
    import json

    import yaml

    if not stdout.strip():
        return True
    try:
        document = json.loads(stdout)
    except ValueError:
        document = yaml.safe_load(stdout)
    return isinstance(document, dict) and document.get("ok") is False and isinstance(document.get("exit_code"), int)
