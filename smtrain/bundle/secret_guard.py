"""Files that look like secrets by their path: their name, or the directory they sit in.

What a file holds is checked in secret_content.py.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

# Matched, lower-cased, against each file's base name.
SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "credentials",
    "credentials.json",
    "client_secret*.json",
    ".netrc",
    "_netrc",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    ".pgpass",
    ".htpasswd",
    ".boto",
    ".dockercfg",
    ".envrc",
    "secrets.yaml",
    "secrets.yml",
    "secrets.json",
    "application_default_credentials.json",
    "msal_token_cache.json",  # Azure CLI's token cache (MSAL), and its older ADAL one below .azure/
    "msal_token_cache.bin",
    "*.tfstate",
    "*.tfstate.backup",
    "*.tfvars",
    "*.tfvars.json",
    ".*_history",  # .bash_history, .zsh_history, .python_history, .psql_history ...
    ".history",
    "fish_history",
    ".s3cfg",
    ".vault-token",
    "*.ppk",
)
# Well-known templates and public keys: refusing them would only teach users to allow-list
# everything.
_SECRET_EXEMPT = (".env.example", ".env.sample", ".env.template", ".env.dist", "*.pub")
# Anything below a directory of this name is treated as a secret.
_SECRET_DIRS = frozenset({".aws", ".ssh", ".gnupg", ".kube", ".azure"})
# Secrets only where they sit: .docker/config.json holds registry logins (a config.json elsewhere
# is not suspect); gcloud keeps its tokens under .config/gcloud/.
_SECRET_PATHS = re.compile(r"(?:^|/)(?:\.docker/config\.json$|\.config/gcloud/)")


def _one_regex(patterns: Sequence[str]) -> re.Pattern[str]:
    # One compiled alternation: checking thousands of names pattern by pattern is slow.
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


_SECRET_RE = _one_regex(SECRET_PATTERNS)
_SECRET_EXEMPT_RE = _one_regex(_SECRET_EXEMPT)


def looks_secret(rel: str) -> bool:
    """Whether the archive path `rel` names a secret-looking file."""
    parts = rel.lower().split("/")
    if not _SECRET_DIRS.isdisjoint(parts[:-1]) or _SECRET_PATHS.search(rel.lower()):
        return True
    name = parts[-1]
    return _SECRET_RE.match(name) is not None and _SECRET_EXEMPT_RE.match(name) is None
