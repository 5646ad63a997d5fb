"""Files that hold a secret whatever their name: a private key, an AWS key pair, a Google credential,
a service's API token.

Only the head of small text files is read (HEAD_BYTES of files up to SCAN_MAX_SIZE; a NUL byte
marks a binary file), once per file, and every pattern runs in linear time over it: a source dir
full of data costs a few KB of reading per file at most.
"""

from __future__ import annotations

import re

HEAD_BYTES = 8 * 1024
# Credential files are small; bigger files are data, and a key buried in them is not what this
# check is for.
SCAN_MAX_SIZE = 1024 * 1024

# A PEM file: its first bytes (after a BOM or blank lines) are a BEGIN line.
_PEM_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*-----BEGIN ")
# A private key block anywhere in a PEM file (a certificate chain may come before the key):
# PKCS#1/#8, EC, encrypted, OpenSSH and PGP keys all say PRIVATE KEY in the BEGIN line.
_PRIVATE_KEY_LINE = re.compile(rb"^-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", re.MULTILINE)
_PUTTY_KEY = re.compile(rb"(?:\xef\xbb\xbf)?\s*PuTTY-User-Key-File-\d+:")

# An access key id (long-term AKIA, temporary ASIA) and a 40-character secret access key. The
# ids AWS documents as examples end in EXAMPLE (AKIAIOSFODNN7EXAMPLE); they are not secrets.
_AWS_KEY_ID = re.compile(rb"(?<![A-Z0-9])(?:AKIA|ASIA)(?![A-Z0-9]{9}EXAMPLE)[A-Z0-9]{16}(?![A-Z0-9])")
_AWS_SECRET = re.compile(rb"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_UPPER = re.compile(rb"[A-Z]")
_LOWER = re.compile(rb"[a-z]")

# Google credential JSON: a service-account key, or the user credential gcloud writes as
# application_default_credentials.json (it may be copied under any name).
_GOOGLE_TYPE = re.compile(rb'"type"\s*:\s*"(service_account|authorized_user)"')
_GOOGLE_SECRET = {b"service_account": re.compile(rb'"private_key"\s*:'),
                  b"authorized_user": re.compile(rb'"refresh_token"\s*:')}


# API tokens in the shapes their services give them (the formats secret scanners such as gitleaks
# publish): a prefix that names the service, then the token's own characters and length.
_TOKENS = tuple((name, re.compile(pattern)) for name, pattern in (
    ("a GitHub token", rb"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    ("a GitHub token", rb"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{82}(?![A-Za-z0-9_])"),
    ("a GitLab token", rb"(?<![A-Za-z0-9_])glpat-[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])"),
    ("a Slack token", rb"(?<![A-Za-z0-9])xox[baprs]-[0-9]{10,13}-[0-9A-Za-z-]{10,}"),
    ("a Stripe live key", rb"(?<![A-Za-z0-9_])[sr]k_live_[0-9A-Za-z]{24,99}(?![0-9A-Za-z])"),
    ("a Google API key", rb"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
))


def _aws_secret_key(head: bytes) -> bool:
    for match in _AWS_SECRET.finditer(head):
        token = match.group()
        # A secret key is random base64: it mixes cases. This tells it from hex digests (git
        # commits, sha1) and long upper-case constants, which are 40 characters too.
        if _UPPER.search(token) and _LOWER.search(token) and not token.endswith(b"EXAMPLEKEY"):
            return True
    return False


def secret_in(head: bytes) -> str | None:
    """What secret the first bytes of a text file hold, in a few words, or None."""
    if _PEM_START.match(head) and _PRIVATE_KEY_LINE.search(head):
        return "holds a private key"
    if _PUTTY_KEY.match(head):
        return "holds a PuTTY private key"
    if _AWS_KEY_ID.search(head) and _aws_secret_key(head):
        return "holds an AWS access key id and secret access key"
    kind = _GOOGLE_TYPE.search(head)
    if kind and _GOOGLE_SECRET[kind.group(1)].search(head):
        return ("is a Google service-account key" if kind.group(1) == b"service_account"
                else "holds a Google user credential (refresh token)")
    for name, pattern in _TOKENS:
        if pattern.search(head):
            return f"holds {name}"
    return None


def content_head(content: bytes) -> bytes | None:
    """read_head() of a file held in memory (one smtrain made)."""
    if not content or len(content) > SCAN_MAX_SIZE:
        return None
    head = content[:HEAD_BYTES]
    return None if b"\0" in head else head


def read_head(path: str, size: int) -> bytes | None:
    """The first HEAD_BYTES of a small text file; None for an empty, large or binary one.

    Raises OSError when the file cannot be read.
    """
    if size == 0 or size > SCAN_MAX_SIZE:
        return None
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    return None if b"\0" in head else head
