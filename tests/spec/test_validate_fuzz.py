"""1,000+ generated and mutated specs through `smtrain validate` in-process: exit 0 or 2, never a traceback."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtrain.cli.commands import main
from tests.support import ROOT

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
SEEDS = [yaml.safe_load(p.read_text()) for p in CONFIGS]
WORKDIR = Path(tempfile.mkdtemp(prefix="smtrain-fuzz-"))

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


runner = CliRunner()


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(text=st.one_of(mutated_specs(), st.text(max_size=200)))
def test_validate_never_tracebacks(text: str) -> None:
    spec = WORKDIR / "job.yaml"
    spec.write_text(text, encoding="utf-8", errors="surrogatepass")
    result = runner.invoke(main, ["validate", str(spec)], env={"HOME": str(WORKDIR)})
    out = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exit_code in (0, 2), (result.exit_code, out, text)
    assert "Traceback" not in out
    assert out.strip(), "validate said nothing"
    if result.exit_code == 2:
        assert "error:" in out
