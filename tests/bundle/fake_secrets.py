"""Obviously fake secrets, shaped like real ones, for the bundle's refusal tests."""

from __future__ import annotations

FAKE_KEY_ID = "AKIAZZZZFAKE0000TEST"
FAKE_TEMP_KEY_ID = "ASIAZZZZFAKE0000TEST"
FAKE_SECRET_KEY = "fAkE0/+x" * 5  # 40 characters, mixed case, as a secret access key
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDfakefakefake\n"


def pem(kind: str) -> str:
    """A PEM private key block of `kind` ("RSA", "OPENSSH", "" for PKCS#8...), with a fake body."""
    label = f"{kind} PRIVATE KEY".strip()
    return f"-----BEGIN {label}-----\n{PEM_BODY}-----END {label}-----\n"
