"""Fuzzing `validate` and `plan -o json` in-process: 10,000 mutated specs (tests/spec/fuzz_corpus.py),
then hypothesis' own texts and mutations. Every corpus spec that validate accepts for SageMaker also
goes through the dry-run renderer (the SDK's own code): none may be refused there.

For every run: exit 0 or 2, never a traceback or an internal error; every line of an exit 2 is a
problem at `file:line:column` (a file-level one names the file alone: the file is empty); a valid
spec says so; plan's JSON is strict JSON (no Infinity, no NaN). Deterministic: a fixed seed for
the corpus, derandomized hypothesis.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.spec.fuzz_corpus import FUZZ_ENV, SEEDS, fuzz_specs
from tests.spec.inprocess import problems_without_position, run, strict_json

CORPUS_SIZE = 10_000
CHUNKS = 20
SEED = 20251110
ENV = {**FUZZ_ENV, "UNSET": None}


@functools.lru_cache(maxsize=1)
def corpus() -> list[tuple[str, str]]:
    return list(fuzz_specs(CORPUS_SIZE, SEED))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def check_spec(workdir: Path, text: str, name: str = "hypothesis", render: bool = False) -> int:
    """validate, then plan -o json, on `text`; assert what every run must hold. The validate exit code.

    With `render`, a spec validate accepts for SageMaker also goes through `submit --dry-run`.
    """
    spec = workdir / "job.yaml"
    spec.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    validate = run("validate", str(spec), env=ENV, home=workdir)
    plan = run("plan", "-o", "json", str(spec), env=ENV, home=workdir)
    for result in (validate, plan):
        context = (name, result.code, result.output[-2000:], text[:3000])
        assert result.exception is None, (repr(result.exception), *context)
        assert result.code in (0, 2), context
        assert "Traceback" not in result.output and "internal error" not in result.output, context
        if result.code == 2:
            if result is plan:  # -o json: the failure is one strict JSON document on stdout too
                document = strict_json(result.stdout)
                assert document["ok"] is False and document["exit_code"] == 2, context
            else:
                assert result.stdout.strip() == "", context  # problems go to stderr
            assert "error: " in result.stderr, context
            assert problems_without_position(result, spec) == [], context
    if validate.code == 0:
        assert "valid" in validate.stdout, (name, validate.output)
    if plan.code == 0:
        summary = strict_json(plan.stdout)
        assert isinstance(summary, dict) and summary["name"], (name, plan.stdout[:2000])
    if render and validate.code == 0 and "--local only" not in validate.stdout:
        # What validate accepts for SageMaker, the SDK path renders: the exact request, no refusal.
        dry = run("submit", str(spec), "--dry-run", "--job-name", "fuzz-1", "-o", "json", env=ENV, home=workdir)
        assert dry.exception is None and dry.code == 0, (name, dry.code, dry.output[-2000:], text[:3000])
        assert strict_json(dry.stdout)["request"]["TrainingJobName"] == "fuzz-1", name
    return validate.code


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_mutated_specs_through_validate_and_plan(workdir: Path, chunk: int) -> None:
    size = CORPUS_SIZE // CHUNKS
    codes = [check_spec(workdir, text, name, render=True) for name, text in corpus()[chunk * size:(chunk + 1) * size]]
    # The corpus keeps a share of valid specs, so plan's own paths run too.
    assert codes.count(0) >= size // 20, f"only {codes.count(0)} of {size} specs were valid"


def test_corpus_is_deterministic_and_varied() -> None:
    again = list(fuzz_specs(200, SEED))
    assert again == corpus()[:200]
    kinds = {part for name, _ in corpus() for part in name.split("-", 1)[1].split("+")}
    for kind in ("alias", "merge", "tag", "bad_tag_content", "deep", "bomb", "huge_number", "trailing_newline",
                 "unicode", "unknown_key", "wrong_type", "interpolation", "control", "not_utf8", "empty"):
        assert kind in kinds, kind


# --- hypothesis: its own texts, and mutations of the example specs --------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                    st.text(max_size=30), st.sampled_from(["auto", "6h", "40GB", "-1", "s3://b", "${X}",
                                                           "${HOME:-x}", "ml.p4d.24xlarge", "2.19", "2.8",
                                                           "horovod", "smddp", "mirrored", "", "1e9"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=3)),
                      max_leaves=6)


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, prefix + (k,))
    return out


@st.composite
def mutated_specs(draw: st.DrawFn) -> str:
    data = yaml.safe_load(yaml.safe_dump(draw(st.sampled_from(SEEDS))))
    for _ in range(draw(st.integers(0, 4))):
        paths = _paths(data)
        path = draw(st.sampled_from(paths))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent.get(path[-1]), dict):
            parent[path[-1]][draw(st.text(min_size=1, max_size=12))] = draw(values)
        if not isinstance(data, dict) or not data:
            break
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    if draw(st.integers(0, 4)) == 0:  # damage the text itself now and then
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.sampled_from(["", ":", "  - x\n", "\t", "{", "]", "&a *a", "!!binary x",
                                                   "\n name: dup\n", "\x00", "<<: *x"])) + text[cut:]
    return text


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(text=st.one_of(mutated_specs(), st.text(max_size=200)))
def test_hypothesis_specs_through_validate_and_plan(workdir: Path, text: str) -> None:
    check_spec(workdir, text)
