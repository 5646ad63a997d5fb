"""Secret files are refused by name and by what they hold; their head is read once, and only their head."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtrain.bundle import secret_content
from smtrain.bundle.build import build_bundle, plan_bundle
from smtrain.bundle.model import BundleError
from tests.bundle.fake_secrets import FAKE_KEY_ID, FAKE_SECRET_KEY, FAKE_TEMP_KEY_ID, pem
from tests.bundle.test_bundle import file_names, write_tree


def refused(tmp_path: Path, files: dict[str, str | bytes], **kwargs: object) -> str:
    src = write_tree(tmp_path / "src", {"train.py": "", **files})
    with pytest.raises(BundleError) as err:
        build_bundle(None, src, **kwargs)  # type: ignore[arg-type]
    return str(err.value)


def shipped(tmp_path: Path, files: dict[str, str | bytes]) -> set[str]:
    src = write_tree(tmp_path / "src", {"train.py": "", **files})
    return file_names(build_bundle(None, src))


# --------------------------------------------------------------------------- by name


@pytest.mark.parametrize("secret", [
    ".envrc",
    "secrets.yaml",
    "config/secrets.yml",
    "secrets.json",
    "gcloud/application_default_credentials.json",
    "infra/terraform.tfstate",
    "infra/terraform.tfstate.backup",
    "prod.tfvars",
    "prod.tfvars.json",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".s3cfg",
    ".vault-token",
    "keys/server.ppk",
    ".docker/config.json",
    "home/.config/gcloud/credentials.db",
])
def test_secret_names_are_refused(tmp_path: Path, secret: str) -> None:
    message = refused(tmp_path, {secret: "value\n"})
    assert f"  {secret}\n" in message
    assert "code.allow_secrets" in message and ".smtrainignore" in message


@pytest.mark.parametrize("name", [
    "config.json", "docker/config.json", "secrets.py", "history.txt", "terraform.tfvars.example",
    ".env.example", "deploy/id_ed25519.pub",
])
def test_names_close_to_secrets_ship(tmp_path: Path, name: str) -> None:
    assert name in shipped(tmp_path, {name: "KEY=\n"})


# --------------------------------------------------------------------------- by content


@pytest.mark.parametrize("content, reason", [
    (pem("RSA"), "holds a private key"),
    (pem(""), "holds a private key"),
    (pem("EC"), "holds a private key"),
    (pem("ENCRYPTED"), "holds a private key"),
    (pem("OPENSSH"), "holds a private key"),
    ("\n" + pem("OPENSSH"), "holds a private key"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----\n", "holds a private key"),
    # A certificate chain with its key after it.
    ("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" + pem("RSA"), "holds a private key"),
    ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n", "holds a PuTTY private key"),
    (f"[default]\naws_access_key_id = {FAKE_KEY_ID}\naws_secret_access_key = {FAKE_SECRET_KEY}\n",
     "AWS access key id and secret access key"),
    (f'{{"AccessKeyId": "{FAKE_TEMP_KEY_ID}", "SecretAccessKey": "{FAKE_SECRET_KEY}"}}',
     "AWS access key id and secret access key"),
    (f"export AWS_SECRET_ACCESS_KEY={FAKE_SECRET_KEY}\nexport AWS_ACCESS_KEY_ID={FAKE_KEY_ID}\n",
     "AWS access key id and secret access key"),
    (json.dumps({"type": "service_account", "project_id": "demo", "private_key_id": "0f",
                 "private_key": pem(""), "client_email": "x@demo.iam.gserviceaccount.com"}, indent=2),
     "Google service-account key"),
    (json.dumps({"client_id": "1.apps.googleusercontent.com", "client_secret": "d", "refresh_token": "1//0g",
                 "type": "authorized_user"}),
     "Google user credential"),
])
def test_secret_content_is_refused_whatever_the_name(tmp_path: Path, content: str, reason: str) -> None:
    message = refused(tmp_path, {"conf/settings.txt": content})
    assert "conf/settings.txt (" in message and reason in message
    assert "code.allow_secrets" in message


@pytest.mark.parametrize("content", [
    # Code that talks about keys holds none.
    'MARKER = "-----BEGIN RSA PRIVATE KEY-----"\n',
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    # AWS's documented example pair.
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    # An access key id alone, or next to a hex digest of the same length as a secret key.
    f"role key id: {FAKE_KEY_ID}\n",
    f"key {FAKE_KEY_ID} rotated in commit 0123456789abcdef0123456789abcdef01234567\n",
    # ... or an upper-case one (a secret key mixes cases: one case alone is no secret key).
    f"key {FAKE_KEY_ID} checksum 0123456789ABCDEF0123456789ABCDEF01234567\n",
    # A secret-key-shaped token without any key id.
    f"token = {FAKE_SECRET_KEY}\n",
    json.dumps({"type": "service_account", "client_email": "x@demo.iam.gserviceaccount.com"}),
])
def test_text_that_holds_no_secret_ships(tmp_path: Path, content: str) -> None:
    assert "notes.txt" in shipped(tmp_path, {"notes.txt": content})


def test_binary_files_are_not_scanned(tmp_path: Path) -> None:
    assert "model.bin" in shipped(tmp_path, {"model.bin": pem("RSA").encode() + b"\0\1\2"})


def test_content_secret_can_be_allowed(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"train.py": "", "fixtures/test_key.txt": pem("RSA")})
    assert "fixtures/test_key.txt" in file_names(build_bundle(None, src, allow=["fixtures/test_key.txt"]))


def test_every_secret_is_named_together(tmp_path: Path) -> None:
    message = refused(tmp_path, {".envrc": "", "a/key.txt": pem("OPENSSH"), "b/creds.ini":
                                 f"{FAKE_KEY_ID}\n{FAKE_SECRET_KEY}\n"})
    for line in ("  .envrc\n", "  a/key.txt (holds a private key)\n", "  b/creds.ini (holds an AWS"):
        assert line in message
    assert "train.py" not in message


# --------------------------------------------------------------------------- cost of the scan


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(file name, bytes asked for) of every read the content scan makes."""
    calls: list[tuple[str, int]] = []

    class Recording:
        def __init__(self, path: str, mode: str) -> None:
            self._fh = open(path, mode)  # noqa: SIM115 - closed by __exit__
            self._name = Path(path).name

        def __enter__(self) -> Recording:
            return self

        def __exit__(self, *exc: object) -> None:
            self._fh.close()

        def read(self, n: int = -1) -> bytes:
            calls.append((self._name, n))
            return self._fh.read(n)

    monkeypatch.setattr(secret_content, "open", Recording, raising=False)
    return calls


def test_each_small_file_head_is_read_once(tmp_path: Path, opened: list[tuple[str, int]]) -> None:
    big = secret_content.SCAN_MAX_SIZE + 1
    src = write_tree(tmp_path / "src", {"train.py": "x = 1\n", "pkg/m.py": "y = 2\n" * 5000, "empty.py": "",
                                        "data.csv": "a,b\n" * (big // 4 + 1)})
    plan_bundle(None, src)
    assert sorted(opened) == [("m.py", secret_content.HEAD_BYTES), ("train.py", secret_content.HEAD_BYTES)]


def test_only_the_head_is_scanned(tmp_path: Path) -> None:
    late_key = "#" * secret_content.HEAD_BYTES + "\n" + f"{FAKE_KEY_ID} {FAKE_SECRET_KEY}\n"
    assert "log.txt" in shipped(tmp_path, {"log.txt": late_key})
    early_key = f"{FAKE_KEY_ID} {FAKE_SECRET_KEY}\n" + "#" * secret_content.HEAD_BYTES
    assert "log.txt (holds an AWS" in refused(tmp_path / "again", {"log.txt": early_key})


def test_unreadable_file_is_a_problem_before_packing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: str, mode: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(secret_content, "open", denied, raising=False)
    src = write_tree(tmp_path / "src", {"train.py": "x = 1\n"})
    with pytest.raises(BundleError, match="cannot read train.py: Permission denied"):
        plan_bundle(None, src)


# Shapes of the services' tokens, made up here (no real token): each must be refused by its content.
_TOKEN_SHAPES = {
    "a GitHub token": "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8",
    "a GitHub token ": "github_pat_" + "11ABCDEFG0" + "x" * 72,
    "a GitLab token": "glpat-" + "Ab1_Cd2-Ef3Gh4Ij5Kl6",
    "a Slack token": "xoxb-" + "1234567890123-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx",
    "a Stripe live key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "a Google API key": "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
}


@pytest.mark.parametrize("kind, token", list(_TOKEN_SHAPES.items()), ids=lambda v: v.strip()[:20])
def test_service_tokens_are_found_by_their_shape(kind: str, token: str) -> None:
    from smtrain.bundle.secret_content import secret_in

    assert secret_in(f"API = '{token}'\n".encode()) == f"holds {kind.strip()}"


def test_look_alikes_of_tokens_are_not_secrets() -> None:
    from smtrain.bundle.secret_content import secret_in

    for text in ("ghp_short", "the AIza prefix", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "xoxb-not-a-token",
                 "glpat-short", "github_pat_", "token = os.environ['GITHUB_TOKEN']"):
        assert secret_in(text.encode()) is None, text


@pytest.mark.parametrize("path", [".azure/accessTokens.json", "msal_token_cache.json", "cfg/msal_token_cache.bin"])
def test_azure_token_caches_are_secrets_by_name(path: str) -> None:
    from smtrain.bundle.secret_guard import looks_secret

    assert looks_secret(path)


@pytest.mark.parametrize("path, secret", [
    (".ssh/config", True), ("home/user/.ssh/known_hosts", True), ("deep/down/.kube/cache/x.json", True),
    ("notes/.ssh", False),  # a file named like the directory is no directory of secrets
    ("docs/ssh/config", False),
])
def test_anything_below_a_secret_directory_at_any_depth_is_secret(path: str, secret: bool) -> None:
    from smtrain.bundle.secret_guard import looks_secret

    assert looks_secret(path) is secret


def test_the_scan_reads_the_first_8_kib_of_text_files_up_to_1_mib(tmp_path: Path) -> None:
    # The sizes are written here: a changed constant in the code is a failure here.
    from smtrain.bundle.secret_content import content_head, read_head

    text = b"a = 1\n" * 2000  # 12,000 bytes
    assert content_head(text) == text[:8192]
    for size, scanned in ((1048576, True), (1048577, False)):
        content = b"#" * size
        path = tmp_path / f"f{size}"
        path.write_bytes(content)
        assert (content_head(content) == content[:8192]) is scanned
        assert (read_head(str(path), size) == content[:8192]) is scanned
    assert content_head(b"") is None and read_head(str(tmp_path / "f1048576"), 0) is None
    assert content_head(b"x" * 8191 + b"\0") is None  # a NUL within the head: binary
    assert content_head(b"x" * 8192 + b"\0") == b"x" * 8192  # after it: the head is text
