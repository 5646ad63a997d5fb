"""The spec file and its YAML read defensively: every odd file ends in problems with positions, never a crash.

Caps on what a spec may expand to (depth, values, text, bytes), only regular files, only the
standard tags checked against their text, merge keys as YAML means them, and positions for
encoding and control-character errors.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smtrain.spec import spec_file, yaml_source
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.specfiles import BASE_TEXT as BASE


def problems_of(path: Path, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_spec(path, env=env or {})
    return [p.render() for p in info.value.problems]


def spec_with(tmp_path: Path, extra: str, base: str = BASE) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(base + extra, encoding="utf-8")
    return path


def test_nesting_beyond_the_cap_is_one_problem_at_its_line(tmp_path):
    depth = 600  # once a RecursionError
    path = spec_with(tmp_path, "hyperparameters: {x: " + "[" * depth + "]" * depth + "}\n")
    assert problems_of(path) == [f"{path}:9:52: (top level): nested more than {yaml_source.MAX_DEPTH} levels deep: "
                                 "a job spec needs a few"]


def test_nesting_through_aliases_is_capped_too(tmp_path):
    # Each line is 10 levels deeper than the one it aliases: 50 levels once expanded, 12 as written.
    lines = ["a0: &a0 [[[[[[[[[[1]]]]]]]]]]"] + [f"a{i}: &a{i} [[[[[[[[[[*a{i - 1}]]]]]]]]]]" for i in range(1, 5)]
    path = spec_with(tmp_path, "hyperparameters:\n" + "".join(f"  {line}\n" for line in lines))
    out = problems_of(path)
    assert len(out) == 1 and "more than 32 levels of nesting" in out[0] and out[0].startswith(f"{path}:")


def test_an_alias_inside_what_it_names_is_refused(tmp_path):
    path = spec_with(tmp_path, "hyperparameters:\n  x: &L [*L]\n")
    out = problems_of(path)
    # An alias is the node it names: the position is the anchor's.
    assert out[0] == f"{path}:10:6: hyperparameters.x[0]: this alias refers to a mapping or list that contains it"


def test_a_merge_of_a_mapping_into_itself_is_refused(tmp_path):
    path = spec_with(tmp_path, "compute: &c {nodes: 1, <<: *c}\n")
    assert any("compute: this alias refers to a mapping or list that contains it" in p for p in problems_of(path))


@pytest.mark.parametrize("levels", [5, 9])
def test_alias_bomb_is_refused_before_it_expands(tmp_path, levels):
    # 9 levels is about 1.2 KB of YAML that would expand to 9^9 values (once 3 GB and a MemoryError).
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    path = spec_with(tmp_path, "hyperparameters:\n" + "".join(f"  {line}\n" for line in lines))
    out = problems_of(path)
    assert len(out) == 1, out
    assert out[0].startswith(f"{path}:") and f"more than {yaml_source.MAX_VALUES} values" in out[0]


def test_expanded_text_is_capped(tmp_path):
    big = "x" * 400_000
    path = spec_with(tmp_path, f"environment:\n  A: &t {big}\n  B: *t\n  C: *t\n")
    out = problems_of(path)
    assert len(out) == 1 and "more than 1000K characters of text" in out[0] and out[0].startswith(f"{path}:10:6:")


@pytest.mark.parametrize("value, line_col, message", [
    ("compute: {nodes: !!int ten}", "9:18", "compute.nodes: 'ten' is not a valid !!int"),
    ("compute: {spot: !!bool linear}", "9:17", "compute.spot: 'linear' is not a valid !!bool"),
    ("training: {learning_rate: !!float abc}", "9:27", "training.learning_rate: 'abc' is not a valid !!float"),
    ("hyperparameters: {x: !!timestamp nope}", "9:22", "hyperparameters.x: 'nope' is not a valid !!timestamp"),
    ("hyperparameters: {x: !!null text}", "9:22", "hyperparameters.x: 'text' is not a valid !!null"),
])
def test_standard_tags_are_checked_against_their_text(tmp_path, value, line_col, message):
    path = spec_with(tmp_path, value + "\n")
    assert problems_of(path) == [f"{path}:{line_col}: {message}"]


@pytest.mark.parametrize("value, path_, tag", [
    ("hyperparameters: !!python/object:os.system {x: 1}", "hyperparameters", "!!python/object:os.system"),
    ("environment: {A: !!python/name:os.system x}", "environment.A", "!!python/name:os.system"),
    ("inputs: !!omap {train: s3://my-bucket/t}", "inputs", "!!omap"),
    ("tags: {team: !!binary aGVsbG8=}", "tags.team", "!!binary"),
    ("code: {allow_secrets: !!set {a: null}}", "code.allow_secrets", "!!set"),
    ("training: {model: !custom mlp}", "training.model", "!custom"),
])
def test_unknown_tags_are_refused(tmp_path, value, path_, tag):
    base = BASE.replace("inputs:\n  train: s3://my-bucket/train\n", "") if value.startswith("inputs") else BASE
    path = spec_with(tmp_path, value + "\n", base)
    out = problems_of(path)
    assert any(f"{path_}: unknown YAML tag {tag}:" in p for p in out), out


def test_standard_tags_that_fit_their_text_type_the_value(tmp_path):
    path = spec_with(tmp_path, "compute: {nodes: !!int \"2\", spot: !!bool \"false\"}\n"
                               "training: {learning_rate: !!float 1, model: !!str mlp}\n"
                               "hyperparameters: {run: !!str 123, when: 2024-13-45}\n")
    spec = load_spec(path, env={}).spec
    assert spec.compute.nodes == 2 and spec.compute.spot is False
    assert spec.training.learning_rate == 1.0
    assert spec.hyperparameters == {"run": "123", "when": "2024-13-45"}  # a date-like value stays its text


def test_merge_keys_merge_and_explicit_keys_win(tmp_path):
    path = spec_with(tmp_path, "hyperparameters:\n  <<: [{a: 1, b: 2}, {b: 3, c: 4}]\n  a: 9\n")
    assert load_spec(path, env={}).spec.hyperparameters == {"a": 9, "b": 2, "c": 4}


def test_a_merge_key_naming_a_scalar_is_a_problem_at_its_line(tmp_path):
    path = spec_with(tmp_path, "x: &A 1\ncompute:\n  <<: *A\n")
    out = problems_of(path)
    assert f"{path}:9:4: compute: a merge key (<<) takes a mapping or a list of mappings" in out


@pytest.mark.parametrize("make", ["fifo", "directory", "device"])
def test_only_a_regular_file_is_read(tmp_path, make):
    if make == "fifo":
        path = tmp_path / "job.yaml"
        os.mkfifo(path)  # reading it would wait for a writer forever
    elif make == "directory":
        path = tmp_path
    else:
        path = Path("/dev/zero")  # reading it would fill memory
    assert problems_of(path) == [f"{path}: (top level): not a regular file (a directory, pipe or device): give the "
                                 "path of a YAML file"]


def test_a_file_over_the_cap_is_refused_unread(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_bytes(BASE.encode() + b"#" * spec_file.MAX_FILE_BYTES)
    assert problems_of(path) == [f"{path}: (top level): larger than 1000KB: a job spec is far smaller; is this the "
                                 "right file?"]


def test_empty_file_names_the_file_alone(tmp_path):
    path = spec_with(tmp_path, "", base="")
    assert problems_of(path) == [f"{path}: (top level): the file is empty: a job spec needs at least name, role "
                                 "and output"]


def test_a_byte_that_is_not_utf8_is_at_its_line_and_column(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_bytes(b"name: x\nrole: \xc3\xa9t\xe9\n")
    assert problems_of(path) == [f"{path}:2:9: (top level): byte 0xe9 is not UTF-8: save the file as UTF-8"]


@pytest.mark.parametrize("char", ["\x01", "\x1b", "\x7f", "\ufffe"])
def test_a_control_character_is_at_its_line_and_column(tmp_path, char):
    path = spec_with(tmp_path, f"environment:\n  A: a{char}b\n")
    assert problems_of(path) == [f"{path}:10:7: (top level): character U+{ord(char):04X} (a control character) is "
                                 'not allowed in YAML; inside double quotes write it as an escape such as "\\t"']


def test_a_byte_order_mark_is_allowed(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    assert load_spec(path, env={}).spec.name == "mnist"


@pytest.mark.parametrize("digits", [400, 5000])
def test_huge_numbers_are_problems_not_crashes(tmp_path, digits):
    number = "9" * digits
    path = spec_with(tmp_path, f"compute:\n  volume_size: {number}GB\n  max_run: {number}\n"
                               f"training:\n  epochs: {number}\n  warmup_epochs: {number}\n")
    out = problems_of(path)
    assert {p.split(": ")[1] for p in out} == {"compute.volume_size", "compute.max_run", "training.epochs",
                                               "training.warmup_epochs"}, out
    assert all(len(p) < 400 for p in out), "a message quotes a huge value in full"


@pytest.mark.parametrize("written, read, why", [
    ("1_000:00:00", 3600000, "base 60"), ("1:30", 90, "base 60"), ("012", 10, "octal"), ("0x_1", 1, "the underscores"),
    ("1__0", 10, "the underscores")])
def test_a_number_yaml_1_1_reads_as_another_is_refused_at_its_line(tmp_path, written, read, why):
    path = spec_with(tmp_path, f"compute:\n  max_run: 3600\nhyperparameters:\n  steps: {written}\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:12:10: hyperparameters.steps: '{written}' reads as {read} in YAML 1.1 ({why}")
    assert problem.endswith("write the number as a person reads it, or quote it to keep the text")


def test_numbers_people_write_still_read_as_written(tmp_path):
    path = spec_with(tmp_path, "hyperparameters:\n  a: 1_000\n  b: 0x1F\n  c: 0.5\n  d: 0\n  e: 1e3\n  f: '012'\n")
    spec = load_spec(path, env={})
    assert spec.spec.hyperparameters == {"a": 1000, "b": 31, "c": 0.5, "d": 0, "e": "1e3", "f": "012"}
