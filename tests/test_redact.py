"""Secret masking (smtrain.redact): names, known values, value shapes, structure, streams, scale."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smtrain import redact
from smtrain.redact import MASK, StreamMasker, looks_secret, mask_data, mask_text, remember


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in __import__("os").environ if looks_secret(n)]:
        monkeypatch.delenv(name)  # the developer's own tokens stay out of these expectations
    redact._forget()


@pytest.mark.parametrize("name", [
    "DB_PASSWORD", "PGPASSWORD", "API_TOKEN", "MYTOKEN", "accessToken", "aws_secret_access_key", "AWS_ACCESS_KEY_ID",
    "AWS_SESSION_TOKEN", "apiKey", "api_key", "APIKEY", "SIGNING_KEY", "KEY", "DB_PASS", "MYSQL_PWD", "BASIC_AUTH",
    "client_secret", "GOOGLE_APPLICATION_CREDENTIALS", "SENTRY_DSN", "ssh_private_key", "passphrase", "DB_PW",
])
def test_secret_looking_names(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize("name", [
    "max_tokens", "tokenizer", "num_tokens_per_batch", "AUTHOR", "KmsKeyId", "LOG_LEVEL", "keep_alive", "bypass_cache",
    "compass", "PATH", "learning_rate", "monkey", "KEYBOARD", "Name", "Value", "sort_order",
])
def test_innocent_names(name: str) -> None:
    assert not looks_secret(name)


def test_values_under_secret_names_are_masked_in_the_data_and_the_rest_stays_intact_and_valid() -> None:
    # Each of these once corrupted the dry run: `true` unquoted everywhere, part of the S3 path, part of a subnet.
    env = {"DB_PASSWORD": "true", "API_KEY": "s3://", "MY_SECRET": "abc123", "LOG_LEVEL": "info"}
    remember(env)
    doc = {"request": {"Environment": env, "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
                       "VpcConfig": {"Subnets": ["subnet-0abc123def"]}, "EnableSageMakerMetricsTimeSeries": True,
                       "HyperParameters": {"api_key": '"k-1"', "epochs": "10"},
                       "Tags": [{"Key": "team", "Value": "ml"}, {"Key": "DEPLOY_TOKEN", "Value": "t"}]}}
    masked = mask_data(doc)
    expected = json.loads(json.dumps(doc))
    expected["request"]["Environment"].update(DB_PASSWORD=MASK, API_KEY=MASK, MY_SECRET=MASK)
    expected["request"]["HyperParameters"]["api_key"] = MASK
    expected["request"]["Tags"][1]["Value"] = MASK
    assert masked == expected
    assert json.loads(json.dumps(masked)) == expected
    assert doc["request"]["Environment"]["DB_PASSWORD"] == "true"  # a copy: the request sent keeps real values


def test_none_under_a_secret_name_stays_null_and_odd_objects_are_masked_as_text() -> None:
    remember({"API_TOKEN": "tok-0123456789"})

    class Odd:
        def __str__(self) -> str:
            return "holds tok-0123456789"

    assert mask_data({"token": None, "obj": Odd(), "n": 3, "f": 1.5, "b": False}) == \
        {"token": None, "obj": f"holds {MASK}", "n": 3, "f": 1.5, "b": False}


def test_short_and_common_values_are_not_searched_in_free_text() -> None:
    remember({"A_PASSWORD": "true", "B_TOKEN": "s3://", "C_SECRET": "ab12", "D_KEY": "https://"})
    text = "enabled true; output s3://bucket; id ab12; url https://example.com"
    assert mask_text(text) == text


def test_a_short_value_is_masked_as_a_whole_token_only() -> None:
    remember({"MY_SECRET": "abc123"})
    assert mask_text("value abc123 here") == f"value {MASK} here"
    assert mask_text("(abc123)") == f"({MASK})"
    assert mask_text("subnet-0abc123def xabc123 abc1234") == "subnet-0abc123def xabc123 abc1234"


def test_a_short_value_ending_in_punctuation_is_whole_before_a_letter() -> None:
    # The value's own last character is what may run on into the text: "-" does not, so "x" after it is apart.
    remember({"MY_SECRET": "abc123-"})
    assert mask_text("value abc123-x here") == f"value {MASK}x here"
    remember({"OTHER_SECRET": "-zyx987"})
    assert mask_text("q-zyx987") == f"q{MASK}"


def test_a_shorter_value_that_stands_whole_is_masked_where_a_longer_one_runs_on() -> None:
    remember({"SHORT_SECRET": "secret", "LONGER_SECRET": "secret-x1"})
    assert mask_text("secret-x1y") == f"{MASK}-x1y"  # "secret-x1" runs on into "y"; "secret" stands whole
    assert mask_text("secret-x1 y") == f"{MASK} y"


def test_a_value_sharing_only_a_prefix_with_the_text_leads_the_search_to_a_shorter_one() -> None:
    remember({"S1_SECRET": "secret", "S2_SECRET": "secret-a0"})
    assert mask_text("secret-a1") == f"{MASK}-a1"  # "secret-a0" sorts nearest, shares "secret-a": "secret" is found


def test_values_nested_under_a_secret_name_are_remembered_too() -> None:
    remember({"DB_PASSWORD": {"primary": "hunter2-abcdef", "replicas": ["hunter3-ghijkl"]}})
    assert mask_text("a hunter2-abcdef b hunter3-ghijkl") == f"a {MASK} b {MASK}"


def test_a_new_process_masks_its_secret_variables_from_the_first_call() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "SMTRAIN_TEST_TOKEN": "s3cr3t-value-from-env"}
    out = subprocess.run([sys.executable, "-c", "from smtrain.redact import mask_text; "
                          "print(mask_text('token s3cr3t-value-from-env'))"], env=env, capture_output=True, text=True)
    assert out.stdout == f"token {MASK}\n", out.stderr


def test_the_search_goes_back_past_unrelated_values_to_the_prefix_that_stands() -> None:
    remember({f"A{i}_SECRET": f"aaaaaa{i:02d}" for i in range(10)})  # ten values sorting before the two below
    remember({"S1_SECRET": "secret", "S2_SECRET": "secret-a0"})
    assert mask_text("secret-a1") == f"{MASK}-a1"


def test_a_value_at_the_very_end_of_the_text_is_masked() -> None:
    remember({"MY_SECRET": "abc123"})
    assert mask_text("id abc123") == f"id {MASK}"


def test_values_of_16_characters_or_more_are_masked_inside_words_shorter_ones_not() -> None:
    remember({"A_TOKEN": "abcdefghijklmnop", "B_TOKEN": "qrstuvwxyz01234"})  # 16 and 15 characters
    assert mask_text("xabcdefghijklmnopx") == f"x{MASK}x"
    assert mask_text("xqrstuvwxyz01234x") == "xqrstuvwxyz01234x"


def test_a_value_inside_another_and_a_third_overlapping_the_first_are_one_mask() -> None:
    text = "k3v9m2x7q1w8e4r6t5y0u2i9o3p7a1s8d6f4g2h5"  # 40 characters
    remember({"A_TOKEN": text[:30], "B_TOKEN": text[3:20], "C_TOKEN": text[24:]})  # C: 16 characters
    assert mask_text(f"[{text}]") == f"[{MASK}]"


def test_overlapping_values_at_the_start_of_a_line_are_one_mask() -> None:
    remember({"A_TOKEN": "x-abcdefghijklmnop", "B_TOKEN": "abcdefghijklmnop-y"})
    assert mask_text("x-abcdefghijklmnop-y]") == f"{MASK}]"


def test_only_a_two_key_mapping_of_text_keys_is_a_name_value_pair() -> None:
    assert mask_data([{"Name": "DB_PASSWORD", "Value": "hunter2"}]) == [{"Name": "DB_PASSWORD", "Value": MASK}]
    assert mask_data([{1: "DB_PASSWORD", 2: "hunter2"}]) == [{1: "DB_PASSWORD", 2: "hunter2"}]
    three = {"Name": "DB_PASSWORD", "Value": "hunter2", "Type": "String"}
    assert mask_data([three]) == [three]
    assert mask_data([{"Name": 5, "Value": "hunter2"}]) == [{"Name": 5, "Value": "hunter2"}]


def test_a_long_value_is_masked_wherever_it_stands_and_overlaps_are_masked_whole() -> None:
    remember({"LONG_TOKEN": "canary-long-secret-0001", "A_TOKEN": "x-abcdefghijklmnop", "B_TOKEN": "abcdefghijklmnop-y"})
    assert mask_text("prefixcanary-long-secret-0001suffix") == f"prefix{MASK}suffix"
    assert mask_text("[x-abcdefghijklmnop-y]") == f"[{MASK}]"  # not `[****-y]`: the second one is masked too


def test_the_longest_known_value_wins_and_values_sharing_a_prefix_are_all_found() -> None:
    remember({f"SECRET_{i}": f"value-{i:06d}" for i in range(1000)})
    remember({"LONGER_SECRET": "value-000001-and-more"})
    assert mask_text("a value-000001-and-more b value-000999 c value-001000 d") == \
        f"a {MASK} b {MASK} c value-001000 d"


def test_remember_follows_nested_mappings_and_ignores_what_is_not_a_mapping() -> None:
    remember({"db": {"password": "nested-secret-1", "host": "db.internal"}})
    remember(["NOT_A_MAPPING_TOKEN"])
    remember(None)
    assert mask_text("login nested-secret-1 at db.internal") == f"login {MASK} at db.internal"


def test_this_processes_secret_variables_are_masked_but_not_its_working_directory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("PWD", "/home/me/project")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock")
    monkeypatch.setenv("GH_TOKEN", "short")
    text = "key wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY in /home/me/project via /tmp/ssh-agent.sock token short"
    assert mask_text(text) == f"key {MASK} in /home/me/project via /tmp/ssh-agent.sock token short"


AKID = "AKIAABCDEFGHIJKLMNOP"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEcanaryPEMbody000\nMIIEcanaryPEMbody111\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(("text", "expected"), [
    (f"id {AKID}.", f"id {MASK}."),
    (f"{AKID},{AWS_SECRET}", f"{MASK},{MASK}"),
    (f"{AWS_SECRET} then {AKID}", f"{MASK} then {MASK}"),
    (f"commit {AWS_SECRET}", f"commit {AWS_SECRET}"),  # alone, a 40-character token may be anything
    (f"{AKID} 0123456789abcdef0123456789abcdef01234567", f"{MASK} 0123456789abcdef0123456789abcdef01234567"),
    (f"key:\n{PEM}\nafter", f"key:\n{MASK}\nafter"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n(cut)", f"{MASK}"),
    ("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nMIIB\n"
                                                                     "-----END CERTIFICATE-----"),
    ("postgres://u:pw@h:5432/db", f"postgres://u:{MASK}@h:5432/db"),
    ("redis://:s3cr3t@cache", f"redis://:{MASK}@cache"),
    ("https://host:8443/x?y=1 s3://bucket/key", "https://host:8443/x?y=1 s3://bucket/key"),
    ("ghp_" + "a1B2" * 9, MASK),
    ("token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", f"token {MASK}"),
    ("glpat-abcdefghij0123456789", MASK),
    ("hf_" + "abcDEF1234" * 3 + "xyzw", MASK),
    ("xoxb-123456789012-abcdefABCDEF", MASK),
    ("sk-proj-" + "Ab1_" * 10, MASK),
    ("sk_live_" + "a1B2c3D4e5F6g7H8", MASK),
    ("AIza" + "B" * 35, MASK),
    ("npm_" + "a1B2" * 9, MASK),
    ("pypi-AgEIcHlwaS5vcmc" + "x" * 50, MASK),
    ("jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", f"jwt {MASK}"),
    ("Authorization: Bearer abcdefghijk123", f"Authorization: Bearer {MASK}"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: Basic {MASK}"),
    ("task-ghp_short risk-free basic training", "task-ghp_short risk-free basic training"),
])
def test_secrets_recognised_by_their_shape_under_any_name(text: str, expected: str) -> None:
    assert mask_text(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("python train.py --api_key v1 --epochs 3", f"python train.py --api_key {MASK} --epochs 3"),
    ("--password=hunter2 -x", f"--password={MASK} -x"),
    ("export DB_PASSWORD=hunter2; echo", f"export DB_PASSWORD={MASK}; echo"),
    ('{"token": "abc", "n": 1}', f'{{"token": "{MASK}", "n": 1}}'),
    ("aws_secret_access_key = 'xyz'", "aws_secret_access_key = 'xyz'"),  # source code, not a setting
    ("max_tokens=512 tokenizer=bert", "max_tokens=512 tokenizer=bert"),
    ("hyperparameters.api_key: the entrypoint ignores it", "hyperparameters.api_key: the entrypoint ignores it"),
])
def test_values_labelled_with_a_secret_name(text: str, expected: str) -> None:
    assert mask_text(text) == expected


def test_arguments_after_a_secret_flag_are_masked_in_a_list() -> None:
    argv = ["python", "train.py", "--api_key", "k", "--epochs", "3", "--password", "p"]
    assert mask_data(argv) == ["python", "train.py", "--api_key", MASK, "--epochs", "3", "--password", MASK]


def test_masking_is_idempotent_and_keeps_quotes_and_backslashes_out_of_the_json() -> None:
    remember({"DB_PASSWORD": 'pa"ss\\word12'})
    once = mask_data({"note": 'x pa"ss\\word12 y', "url": "postgres://u:pw@h"})
    assert once == {"note": f"x {MASK} y", "url": f"postgres://u:{MASK}@h"}
    assert mask_data(once) == once and json.loads(json.dumps(once)) == once


def test_a_stream_masks_a_private_key_printed_over_several_lines_per_host() -> None:
    masker = StreamMasker()
    lines = [("algo-1", "key follows"), ("algo-1", "-----BEGIN PRIVATE KEY-----"), ("algo-2", "MIIEnotsecret"),
             ("algo-1", "MIIEcanaryline1"), ("algo-1", "MIIEcanaryline2"),
             ("algo-1", "-----END PRIVATE KEY----- done"), ("algo-1", "MIIEafter")]
    assert [masker(host, line) for host, line in lines] == [
        "key follows", MASK, "MIIEnotsecret", MASK, MASK, f"{MASK} done", "MIIEafter"]


def _dry_run_document(environment: dict[str, str]) -> dict[str, Any]:
    """The shape of `submit --dry-run -o json`, with the given Environment."""
    return {"job_name": "big-20250101-000000-abcd",
            "request": {"AlgorithmSpecification": {"TrainingImage": "763104351884.dkr.ecr.us-east-1.amazonaws.com/x",
                                                   "EnableSageMakerMetricsTimeSeries": True},
                        "OutputDataConfig": {"S3OutputPath": "s3://my-bucket/out"},
                        "HyperParameters": {"epochs": "10", "sagemaker_program": '"smtrain_entry.py"'},
                        "Environment": environment, "VpcConfig": {"Subnets": ["subnet-0abc123def"]}},
            "upload": {"uri": "s3://my-bucket/out/source/0a1b/sourcedir.tar.gz", "bytes": 1, "files": []}}


def test_a_dry_run_with_100000_secret_environment_entries_is_masked_correctly() -> None:
    # The figure for this size is bench/run.py's (secret_masking); here: every entry masked, nothing else.
    environment = {f"SECRET_{i}": f"value-{i:06d}-{i * 7919 % 100003:05d}" for i in range(100_000)}
    environment["LOG_LEVEL"] = "info value-000042-" + environment["SECRET_42"][13:]
    remember(environment)
    masked = mask_data(_dry_run_document(environment))
    expected = _dry_run_document({**{name: MASK for name in environment}, "LOG_LEVEL": f"info {MASK}"})
    assert json.loads(json.dumps(masked)) == masked == expected


SPLIT_SECRET = "split-canary-secret-0001"


@pytest.mark.parametrize("cut", ["\x1b[0m", "\x1b[1;31m", "\x9b0m", "\x1b]0;title\x07", "\x1b]8;;https://x\x1b\\",
                                 "\x1bP1$r\x1b\\", "\x07", "\x00", "\u200b", "\u202e", "\x1b(B", "x\bX\b",
                                 "\u061c", "\u00ad", "\U000e0041", "\ufff9", "\u2066"])
def test_a_secret_cut_by_a_control_sequence_is_masked_as_the_terminal_shows_it(cut: str) -> None:
    remember({"password": SPLIT_SECRET})
    cut = cut.replace("x\bX\b", "")  # a backspace pair draws and erases in place: nothing shown
    printed = f"value {SPLIT_SECRET[:7]}{cut}{SPLIT_SECRET[7:]} end"
    assert mask_text(printed) == f"value {MASK} end"
    assert StreamMasker()("algo-1", printed) == f"value {MASK} end"


@pytest.mark.parametrize(("printed", "shown"), [
    ("\x1b]0;new window title\x07ok", "ok"),
    ("\x1b]52;c;Y3VybCBldmlsfHNo\x07ok", "ok"),  # OSC 52: write the reader's clipboard
    ("\x1b]52;c;Y3VybCBldmlsfHNo\x1b\\ok", "ok"),
    ("\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\", "link"),
    ("\x1bP+q544e\x1b\\ok", "ok"),  # DCS: a terminfo query whose answer the terminal types back
    ("\x9d0;title\x9cok", "ok"),  # the same in 8-bit C1 form
    ("a\x1bcb", "ab"),  # RIS: reset the terminal
    ("\x1b[2J\x1b[Hcleared", "cleared"),
    ("tab\tstays", "tab\tstays"),
    ("unterminated \x1b]0;title runs to the end", "unterminated "),
    ("progress 1/2\rprogress 2/2", "progress 2/2"),
])
def test_output_reaches_a_terminal_with_no_control_but_drawn_text(printed: str, shown: str) -> None:
    assert mask_text(printed) == shown
    assert mask_data({"message": printed}) == {"message": shown}


@pytest.mark.parametrize(("value", "secret"), [
    ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", True),  # the documented example's shape
    ("Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZkdI", True),
    ("5d0912510ec223c8c42bd0b3aae7e15c737f583a", False),  # a git commit id
    ("MyVeryLongApplicationNameVersion2Release", False),  # CamelCase, one digit
    ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKE", False),  # 39 characters
    ("/tmp/Experiments/MnistModel2/runs/Trial1", False),  # a working directory: a path
])
def test_a_value_shaped_like_an_aws_secret_key_is_masked_under_any_name(value: str, secret: bool) -> None:
    redact._forget()
    remember({"BUILD_REF": value, "nested": {"other": value}})
    assert (mask_text(f"ref={value};") == f"ref={MASK};") is secret
    assert (mask_data({"BUILD_REF": value}) == {"BUILD_REF": MASK}) is secret


def test_a_working_directory_shaped_like_a_key_stays_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PWD", "/tmp/Experiments/MnistModel2/runs/Trial1")
    monkeypatch.setenv("OLDPWD", "Experiments/MnistModel2/runs/Trial12/Xyz")  # by its name: not a secret
    monkeypatch.setenv("BUILD_REF", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    text = "/tmp/Experiments/MnistModel2/runs/Trial1/job.yaml:3: role; Experiments/MnistModel2/runs/Trial12/Xyz"
    assert mask_text(text) == text
    assert mask_text("ref wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") == f"ref {MASK}"


@pytest.mark.parametrize("line, masked", [
    ('{"password": "ab\\"cd"}', '{"password": "****"}'),
    ('{"db_password": "s3cr\\"et-value", "x": 1}', '{"db_password": "****", "x": 1}'),
    ('password="ab\\"cd" next', 'password="****" next'),
])
def test_a_labelled_value_with_an_escaped_quote_is_masked_whole(line: str, masked: str) -> None:
    assert mask_text(line) == masked
    if line.startswith("{"):
        json.loads(mask_text(line))  # a JSON line stays JSON


def test_a_secret_set_in_the_environment_after_the_first_output_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    # A notebook's kernel imports smtrain, shows a result, then sets a token and shows another: the process's
    # environment is read at each use, not once (in-process CLI tests run many commands in one process too).
    redact._forget()
    monkeypatch.delenv("SMTRAIN_LATE_TOKEN", raising=False)
    assert mask_text("first line") == "first line"
    monkeypatch.setenv("SMTRAIN_LATE_TOKEN", "late-value-0123")
    assert mask_text("token late-value-0123 here") == f"token {MASK} here"
    monkeypatch.setenv("SMTRAIN_LATE_TOKEN", "changed-value-4567")  # a value once known stays masked
    assert mask_text("late-value-0123 changed-value-4567") == f"{MASK} {MASK}"
