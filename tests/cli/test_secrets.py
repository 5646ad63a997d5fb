"""No credential or secret value is ever printed, by any command, on any path (--debug included).

Canary values (obviously fake) sit in the AWS credentials and a secret-looking variable of the
process environment, under secret-looking names in the spec's `environment` and `hyperparameters`,
under innocent names in shapes that give them away (an access key id with its secret key, a lone
AWS secret key, a GitHub token, a URL's password, a private key block), in spec errors and in an
internal error; the job prints them whole, and cut by a colour code. Every output of every command,
and every file smtrain writes for a local job (host logs, record.json, output/failure), is searched
for them; every JSON output must parse; no output holds a terminal control character.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.local.support import spec_file as local_spec_file
from tests.support import ROOT, moto_server
from tests.support.cli_runner import smtrain
from tests.support.moto_server import (
    CANARY_ACCESS_KEY,
    CANARY_SECRET_KEY,
    CANARY_SESSION_TOKEN,
    Fault,
    MotoServer,
    live_spec,
)

DB_PASSWORD = "canary-db-password-never-print"
API_TOKEN = "canary-api-token-never-print"
PROCESS_TOKEN = "canary-process-token-never-print"
MY_TOKEN = "tok-literal-canary-0001"
HP_API_KEY = "hp-api-key-canary-0001"
HP_PASSWORD = "Zq9!x"  # too short to search for in text: only structure and `--password VALUE` hide it
SHAPED_AKID = "AKIACANARYSHAPE00001"
SHAPED_AWS_SECRET = "CanaryShapedAwsSecret/0123456789abcdefGH"
GITHUB_TOKEN = "ghp_CanaryGithubToken0123456789abcdefghi"
URL_PASSWORD = "UrlPwCanary9"
PEM_LINES = ("MIIEcanaryPemLineOne", "MIIEcanaryPemLineTwo")
LONE_AWS_SECRET = "Innocent/Canary0Shaped1Aws2Secret3Key4Xy"  # an AWS secret key's shape, no key id beside it
PEM = "\n".join(("-----BEGIN PRIVATE KEY-----", *PEM_LINES, "-----END PRIVATE KEY-----"))

SECRET_ENV = {"DB_PASSWORD": DB_PASSWORD, "API_TOKEN": API_TOKEN, "MY_TOKEN": MY_TOKEN}
SHAPED_ENV = {"CREDS_CSV": f"{SHAPED_AKID},{SHAPED_AWS_SECRET}", "REPO_AUTH": GITHUB_TOKEN,
              "DATABASE_URL": f"postgres://app:{URL_PASSWORD}@db:5432/x", "TLS_MATERIAL": PEM,
              "BUILD_REF": LONE_AWS_SECRET}
HYPERPARAMETERS = {"api_key": HP_API_KEY, "password": HP_PASSWORD}
CANARIES = (CANARY_ACCESS_KEY, CANARY_SECRET_KEY, CANARY_SESSION_TOKEN, DB_PASSWORD, API_TOKEN, PROCESS_TOKEN,
            MY_TOKEN, HP_API_KEY, HP_PASSWORD, SHAPED_AKID, SHAPED_AWS_SECRET, GITHUB_TOKEN, URL_PASSWORD, *PEM_LINES,
            LONE_AWS_SECRET)
SHOWN_ENV = {"DB_PASSWORD": "****", "API_TOKEN": "****", "MY_TOKEN": "****", "CREDS_CSV": "****,****",
             "REPO_AUTH": "****", "DATABASE_URL": "postgres://app:****@db:5432/x", "TLS_MATERIAL": "****",
             "BUILD_REF": "****"}
# Anything a terminal would act on or hide: C0 controls but tab and newline, DEL, C1 controls.
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _split(secret: str, cut: str = "\x1b[0m") -> str:
    """`secret` as a program may print it: a colour code in its middle, which a terminal does not show."""
    return secret[:5] + cut + secret[5:]


def _assert_clean(text: str, what: str) -> None:
    assert len(SHAPED_AWS_SECRET) == 40 and len(GITHUB_TOKEN) == 40  # the shapes the canaries must have
    for canary in CANARIES:
        assert canary not in text, f"{canary} in {what}"


def _assert_output_clean(proc: subprocess.CompletedProcess[str], args: tuple[str, ...]) -> None:
    _assert_clean(proc.stdout, f"stdout of {args}")
    _assert_clean(proc.stderr, f"stderr of {args}")
    for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        control = CONTROLS.search(text)
        assert control is None, f"{control.group()!r} in {name} of {args}: {text[max(control.start() - 80, 0):][:160]!r}"


def _parses(proc: subprocess.CompletedProcess[str], args: tuple[str, ...]) -> object:
    """The output in the format `args` asked for, parsed (JSON Lines for `logs -o json`); None if none."""
    if not proc.stdout:
        return None  # e.g. `plan -o json` of an invalid spec: its problems go to stderr
    if "yaml" in args:
        return yaml.safe_load(proc.stdout)
    if "json" not in args:
        return None
    if args[0] == "logs":
        return [json.loads(line) for line in proc.stdout.splitlines()]
    return json.loads(proc.stdout)


def _run_clean(*args: str, env: dict[str, str], codes: tuple[int, ...] = (0,)) -> tuple[str, object]:
    proc = smtrain(*args, env=env)
    assert proc.returncode in codes, (args, proc.stderr[-3000:])
    _assert_output_clean(proc, args)
    assert "Traceback" not in proc.stderr or args[0] == "--debug"
    return proc.stdout, _parses(proc, args)


@pytest.mark.slow  # runs through the SageMaker SDK
def test_secrets_never_reach_the_output(aws: MotoServer, tmp_path: Path) -> None:
    spec = str(live_spec(tmp_path, {"environment": {**SECRET_ENV, **SHAPED_ENV, "LOG_LEVEL": "info"},
                                    "hyperparameters": HYPERPARAMETERS}))
    env = aws.env(tmp_path, DEPLOY_TOKEN=PROCESS_TOKEN)

    for args in (("validate", spec), ("validate", spec, "-o", "json"), ("plan", spec), ("plan", spec, "-o", "json"),
                 ("submit", spec, "--dry-run", "--job-name", "secret-job"),
                 ("submit", spec, "--dry-run", "--job-name", "secret-job", "-o", "yaml"),
                 ("--debug", "submit", spec, "--dry-run", "--job-name", "secret-job", "-o", "json")):
        out, parsed = _run_clean(*args, env=env)
        if args[0] == "plan" and "json" in args:
            assert all("--password ****" in " ".join(h["command"]) for h in parsed["launch"])  # type: ignore[index]
        if "--dry-run" in args and parsed is not None:  # text mode is for people: no request to parse
            request = parsed["request"]  # type: ignore[index]
            assert request["Environment"] == {**SHOWN_ENV, "LOG_LEVEL": "info"}
            assert request["HyperParameters"]["api_key"] == request["HyperParameters"]["password"] == "****"

    _run_clean("submit", spec, "--job-name", "secret-job", "-o", "json", env=env)
    # Masking is for display only: SageMaker gets the real values.
    sent = aws.control.create_requests[0]
    assert sent["Environment"]["DB_PASSWORD"] == DB_PASSWORD and sent["Environment"]["TLS_MATERIAL"] == PEM

    aws.set_status("secret-job", "Failed", failure_reason=f"container exited; AWS key {_split(CANARY_ACCESS_KEY)}"
                                                          f"\x1b]0;pwned\x07 token {_split(API_TOKEN, chr(0x9b) + '0m')}")
    now = int(time.time() * 1000)
    aws.put_logs("secret-job", "algo-1", ["starting", f"aws_secret_access_key={CANARY_SECRET_KEY}",
                                          f"token is {MY_TOKEN}", f"creds {SHAPED_AKID} {SHAPED_AWS_SECRET}",
                                          "-----BEGIN RSA PRIVATE KEY-----", *PEM_LINES,
                                          "-----END RSA PRIVATE KEY-----", "after the key"], timestamp_ms=now)
    # MY_TOKEN and HP_API_KEY are known to `logs` from the job itself (DescribeTrainingJob), not from a spec.
    aws.put_logs("secret-job", "algo-2", [f"token {PROCESS_TOKEN}", f"clone {GITHUB_TOKEN}", f"key {HP_API_KEY}"],
                 timestamp_ms=now + 1)
    # Cut by escape sequences, and terminal controls of every kind: title, clipboard, hyperlink, DCS, C1.
    aws.put_logs("secret-job", "algo-3", [f"db {_split(DB_PASSWORD)} ref {_split(LONE_AWS_SECRET, chr(7))}",
                                          f"creds {_split(SHAPED_AKID, chr(0x1b) + ']8;;https://x' + chr(7))}",
                                          f"\x1b]52;c;{_split(GITHUB_TOKEN)}\x07 \x1bP1$r{PROCESS_TOKEN}\x1b\\",
                                          "\x1b]0;window title\x07\x9b31mvisible\x1b[0m\x1bc\x00end"],
                 timestamp_ms=now + 2)
    for args in (("status", "secret-job"), ("status", "secret-job", "-o", "json"), ("logs", "secret-job"),
                 ("logs", "secret-job", "-o", "json")):
        out, _ = _run_clean(*args, env=env, codes=(0, 1))
    assert "[algo-1] aws_secret_access_key=****" in smtrain("logs", "secret-job", env=env).stdout
    assert "after the key" in out
    shown = smtrain("logs", "secret-job", env=env).stdout
    assert "[algo-3] db **** ref ****" in shown and "[algo-3] visibleend" in shown, shown


@pytest.mark.slow  # local runs render their request through the SageMaker SDK
def test_a_local_run_masks_its_stream_its_files_and_every_command_after_it(tmp_path: Path) -> None:
    echoed = [*SECRET_ENV, *SHAPED_ENV, "DEPLOY_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]
    split = ["DB_PASSWORD", "API_TOKEN", "BUILD_REF", "DEPLOY_TOKEN", "AWS_SECRET_ACCESS_KEY"]
    spec = str(local_spec_file(tmp_path, {"compute": {"nodes": 2}, "environment": {**SECRET_ENV, **SHAPED_ENV},
                                          "hyperparameters": {**HYPERPARAMETERS, "echo_env": ",".join(echoed),
                                                              "echo_split": ",".join(split)}}))
    home = tmp_path / "home"
    env = {"SMTRAIN_HOME": str(home), "SMTRAIN_POLL_SECONDS": "0.2", "DEPLOY_TOKEN": PROCESS_TOKEN,
           "AWS_ACCESS_KEY_ID": CANARY_ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": CANARY_SECRET_KEY,
           "AWS_SESSION_TOKEN": CANARY_SESSION_TOKEN}

    stream, _ = _run_clean("submit", spec, "--local", "--job-name", "secret-ok", env=env)
    assert "[algo-1] env MY_TOKEN: ****" in stream and "[algo-2] env DATABASE_URL: postgres://app:****@db" in stream
    assert all(f"[algo-1] split {name}: ****\n" in stream for name in split), stream
    # A failure whose reason quotes a secret, and one whose reason is the command line (`--password VALUE`).
    _, failed = _run_clean("submit", spec, "--local", "--job-name", "secret-reason", "-o", "json",
                           "--set", "hyperparameters.mode=fail", "--set", f"hyperparameters.reason=refused {API_TOKEN}",
                           env=env, codes=(1,))
    assert failed["job"]["failure_reason"] == "AlgorithmError: refused ****"  # type: ignore[index]
    _, failed = _run_clean("submit", spec, "--local", "--job-name", "secret-command", "-o", "json",
                           "--set", "hyperparameters.mode=fail", env=env, codes=(1,))
    assert "--password ****" in failed["job"]["failure_reason"]  # type: ignore[index]

    for job in ("secret-ok", "secret-reason", "secret-command"):
        for args in (("status", job), ("status", job, "-o", "json"), ("logs", job), ("logs", job, "-o", "json")):
            _run_clean(*args, env=env, codes=(0, 1))
    _run_clean("list", "--local", "-o", "json", env=env)
    # Every file smtrain wrote for the jobs, but the ones the container contract hands the program with
    # the real values (as SageMaker does) and what the program itself wrote (its code, data and model,
    # and secret-reason's output/failure).
    written = [path for path in sorted(home.rglob("*")) if path.is_file() and not any(
        part in ("code", "data", "model") for part in path.relative_to(home).parts) and
        path.name != "hyperparameters.json" and not (path.name == "failure" and "secret-reason" in path.parts)]
    names = [path.name for path in written]
    # The failure file of secret-command is smtrain's: its Command line holds `--api_key VALUE`.
    assert names.count("record.json") == 3 and names.count("failure") == 1 and names.count("algo-1.log") == 3
    for path in written:
        _assert_clean(path.read_text(encoding="utf-8"), str(path))
        assert CONTROLS.search(path.read_text(encoding="utf-8")) is None, path


def test_spec_errors_quoting_secrets_are_masked(tmp_path: Path) -> None:
    # The spec's own secrets are registered as soon as it is read, before the problems are printed.
    spec = tmp_path / "job.yaml"
    spec.write_text(f"environment:\n  API_TOKEN: &tok {API_TOKEN}\n  DB_PASSWORD: {DB_PASSWORD}\n"
                    "name: test-job\nrole: ${AWS_SECRET_ACCESS_KEY}\nregion: *tok\ntensorflow: {version: '2.19'}\n"
                    "output: s3://my-bucket/out\n")
    env = {"AWS_SECRET_ACCESS_KEY": CANARY_SECRET_KEY}
    for args in (("validate", str(spec)), ("validate", str(spec), "-o", "json"), ("plan", str(spec), "-o", "json"),
                 ("--debug", "submit", str(spec), "--dry-run", "-o", "yaml")):
        out, parsed = _run_clean(*args, env=env, codes=(2,))
    text = smtrain("validate", str(spec), env=env).stderr
    assert "role: '****' is not an IAM role ARN" in text and "region: '****' is not an AWS region" in text
    parsed = json.loads(smtrain("validate", str(spec), "-o", "json", env=env).stdout)
    assert {p["field"] for p in parsed["problems"]} == {"role", "region"}


# A bug stand-in: planning fails with a message that quotes a secret of the spec.
BROKEN_PLAN = """
import sys
import smtrain.plan.build as build

def broken(loaded, catalog, *args, **kwargs):
    raise RuntimeError("cannot plan with " + loaded.spec.environment["DB_PASSWORD"])

build.build_plan = build.plan_with_problems = broken  # plan, submit; validate (every problem at once)
from smtrain.cli.commands import main
main(sys.argv[1:], prog_name="smtrain")
"""


@pytest.mark.parametrize("debug", [False, True])
def test_an_internal_error_quoting_a_spec_secret_is_masked(tmp_path: Path, debug: bool) -> None:
    spec = live_spec(tmp_path, {"environment": {"DB_PASSWORD": DB_PASSWORD}})
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    args = ["--debug"] * debug + ["validate", str(spec)]
    proc = subprocess.run([sys.executable, "-c", BROKEN_PLAN, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 70, proc.stderr
    assert ("Traceback" in proc.stderr) == debug
    assert "RuntimeError: cannot plan with ****" in proc.stderr
    _assert_output_clean(proc, tuple(args))


@pytest.mark.slow
def test_debug_tracebacks_mask_secrets_too(aws: MotoServer, tmp_path: Path) -> None:
    spec = live_spec(tmp_path, {"environment": {"DB_PASSWORD": DB_PASSWORD}})
    # A server error that quotes the request, as AWS validation messages can.
    aws.control.inject("CreateTrainingJob", Fault("ValidationException",
                                                  f"Value '{DB_PASSWORD}' at 'environment.DB_PASSWORD' failed to "
                                                  f"satisfy constraint (caller {CANARY_ACCESS_KEY})"))
    proc = smtrain("--debug", "submit", str(spec), "--job-name", "debug-job", env=aws.env(tmp_path))
    assert proc.returncode == 4
    assert "Traceback" in proc.stderr and "ClientError" in proc.stderr  # --debug shows the chain...
    assert "Value '****' at 'environment.DB_PASSWORD'" in proc.stderr  # ...with the secrets masked
    _assert_output_clean(proc, ("--debug", "submit"))


@pytest.mark.slow  # runs through the SageMaker SDK
def test_dry_run_values_that_once_corrupted_the_output_stay_valid_json(tmp_path: Path) -> None:
    # `true`, `s3://` and a short value inside a subnet id: masked where they are secret, nowhere else.
    spec = live_spec(tmp_path, {"environment": {"DB_PASSWORD": "true", "API_KEY": "s3://", "MY_SECRET": "abc123"},
                                "network": {"subnets": ["subnet-0abc123def"], "security_groups": ["sg-0abc1234"]}})
    proc = smtrain("submit", str(spec), "--dry-run", "--job-name", "valid-json", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    request = json.loads(proc.stdout)["request"]
    assert request["Environment"] == {"DB_PASSWORD": "****", "API_KEY": "****", "MY_SECRET": "****"}
    assert request["OutputDataConfig"]["S3OutputPath"] == f"s3://{moto_server.BUCKET}/out"
    assert request["VpcConfig"]["Subnets"] == ["subnet-0abc123def"]
    assert request["AlgorithmSpecification"]["EnableSageMakerMetricsTimeSeries"] is True
