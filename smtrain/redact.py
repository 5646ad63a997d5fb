"""Keeping secret values out of everything smtrain prints.

Two sources of secrets: environment variables of this process whose names look secret (AWS
credentials among them), and values a command learns while it runs (the spec's `environment`
entries with secret-looking names), which it registers with :func:`remember`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_SECRET_NAME = re.compile(r"(SECRET|TOKEN|PASSWORD|PASSWD|PASS$|PWD|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|"
                          r"AUTH|SESSION|_KEY$|^KEY$)", re.IGNORECASE)
MASK = "****"
# Process variables whose names match but which hold no secret (and common values, such as the
# working directory, that masking would garble everywhere).
_NOT_SECRET = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK", "SESSION_MANAGER", "DESKTOP_SESSION"})
_NOT_SECRET_PREFIXES = ("XDG_SESSION_", "DBUS_SESSION_")
# Shorter values would mask ordinary words all over the output. Credentials are long; a value
# the spec itself names as secret is masked from this length on.
_MIN_ENV_SECRET = 8
_MIN_SPEC_SECRET = 4

_remembered: set[str] = set()


def looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def mask_environment(env: Mapping[str, str]) -> dict[str, str]:
    """Environment values whose names look secret, hidden for printing."""
    return {k: (MASK if looks_secret(k) else v) for k, v in env.items()}


def remember(values: Mapping[str, object]) -> None:
    """Register the values of secret-looking names (e.g. the spec's environment) for :func:`redact`."""
    _remembered.update(str(v) for k, v in values.items() if looks_secret(k) and v is not None)


def _secret_values(env: Mapping[str, str]) -> list[str]:
    found = {v for k, v in env.items()
             if looks_secret(k) and k not in _NOT_SECRET and not k.startswith(_NOT_SECRET_PREFIXES)
             and len(v) >= _MIN_ENV_SECRET}
    found |= {v for v in _remembered if len(v) >= _MIN_SPEC_SECRET}
    # Longest first, so a secret that contains another is masked whole.
    return sorted(found, key=len, reverse=True)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """`text` with every known secret value replaced by ``****``."""
    for value in _secret_values(os.environ if env is None else env):
        if value in text:
            text = text.replace(value, MASK)
    return text

