"""smtrain.load: a YAML file or a mapping, overrides as a mapping or as --set texts, env for ${VAR}; problems as
data (file:line:column for a file, the field path for a mapping); every error a UserError with its exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

import smtrain
from smtrain import exit_codes
from smtrain.spec.problems import Problem
from tests.support import ROOT
from tests.support.specfiles import BASE, merged

DEMO = ROOT / "configs" / "local-demo.yaml"


def test_a_yaml_file_is_read_with_env_for_its_variables(tmp_path: Path) -> None:
    loaded = smtrain.load(DEMO, env={"SMTRAIN_DEMO_DATA": str(tmp_path / "digits")})
    assert isinstance(loaded, smtrain.LoadedSpec)
    assert loaded.spec.name == "digits-local" and loaded.spec.compute.nodes == 2
    assert loaded.spec.inputs["train"].uri == str(tmp_path / "digits" / "train")
    # str and Path alike; the default of ${VAR:-default} when env lacks it, relative to the file
    default = smtrain.load(str(DEMO), env={})
    assert default.spec.inputs["train"].uri == "../.demo/digits/train"
    assert default.path(default.spec.inputs["train"].uri) == (ROOT / ".demo" / "digits" / "train").resolve()


def test_a_mapping_with_overrides_as_a_mapping_or_as_set_texts() -> None:
    assert smtrain.load(BASE).spec.compute.nodes == 1
    assert smtrain.load(BASE, {"compute.nodes": 2}).spec.compute.nodes == 2
    assert smtrain.load(BASE, ["compute.nodes=3"]).spec.compute.nodes == 3
    assert smtrain.load(BASE, "compute.nodes=4").spec.compute.nodes == 4
    # a value that is not text goes through as it is: a mapping, a list
    tagged = smtrain.load(BASE, {"tags": {"team": "ml", "cost": "x1"}})
    assert tagged.spec.tags == {"team": "ml", "cost": "x1"}
    env = smtrain.load(merged(BASE, {"output": "${OUT}"}), env={"OUT": "s3://my-out/o"})
    assert env.spec.output == "s3://my-out/o"
    # a mapping's relative paths are read from base_dir (default: the working directory)
    assert smtrain.load(BASE, base_dir=ROOT / "configs").path("code") == ROOT / "configs" / "code"
    assert smtrain.load(BASE).path("code") == Path.cwd().resolve() / "code"


def test_a_mapping_names_problems_by_field_path_alone() -> None:
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.load(merged(BASE, {"compute": {"nodes": "x"}, "bogus": 1}))
    err = caught.value
    assert err.code == exit_codes.USAGE == 2
    assert [(p.path, p.location) for p in err.problems] == [(("compute", "nodes"), None), (("bogus",), None)]
    lines = str(err).splitlines()
    assert lines[0] == "compute.nodes: 'x' is not a whole number"
    assert lines[1].startswith("bogus: unknown field 'bogus'")


def test_a_mapping_s_variable_problem_has_no_line_either() -> None:
    # The lines of the YAML a mapping is read through are no one's: a ${VAR} problem names the field only.
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.load(merged(BASE, {"output": "${OUT}"}), env={})
    [problem] = caught.value.problems
    assert problem.path == ("output",) and problem.location is None
    assert str(caught.value) == "output: environment variable OUT is not set (write ${OUT:-default} to give a default)"


def test_an_override_s_problem_names_the_override() -> None:
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.load(BASE, {"compute.nodes": "x"})
    assert str(caught.value) == "overrides['compute.nodes'] = 'x': compute.nodes: 'x' is not a whole number"
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.load(BASE, ["compute.nodes=x"])
    assert str(caught.value) == "--set compute.nodes=x: compute.nodes: 'x' is not a whole number"


def test_a_mapping_s_values_are_taken_as_python_gives_them(tmp_path: Path) -> None:
    # A string stays a string ("null" and "[a, b]" too), a path is its text, a tuple a list: no --set reading.
    loaded = smtrain.load(BASE, {"environment.MODE": "null", "environment.LIST": "[a, b]",
                                 "environment.WHERE": tmp_path, "compute.nodes": 2})
    assert loaded.spec.environment == {"MODE": "null", "LIST": "[a, b]", "WHERE": str(tmp_path)}
    assert loaded.spec.compute.nodes == 2
    (tmp_path / "train.py").write_text("print('hi')\n")
    code = merged(BASE, {"code": {"source_dir": tmp_path, "entry_point": "train.py"}})
    assert smtrain.load(code).spec.code.source_dir == str(tmp_path)


def test_a_bad_file_names_file_line_and_column(tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text("name: mnist\nrole: arn:aws:iam::123456789012:role/R\nregion: us-east-1\n"
                    "inputs:\n  train: s3://my-bucket/train\noutput: s3://my-bucket/out\ncompute:\n  nodes: many\n")
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.load(spec)
    err = caught.value
    assert isinstance(err, smtrain.UserError) and err.code == 2
    [problem] = err.problems
    assert isinstance(problem, Problem) and problem.path == ("compute", "nodes")
    assert (problem.location.source, problem.location.line, problem.location.column) == (str(spec), 8, 10)
    assert problem.render() == f"{spec}:8:10: compute.nodes: 'many' is not a whole number"


def test_a_missing_file_and_a_wrong_type_are_refused(tmp_path: Path) -> None:
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.load(tmp_path / "nowhere.yaml")
    assert caught.value.code == 2 and "nowhere.yaml" in str(caught.value)
    with pytest.raises(TypeError):
        smtrain.load(42)  # type: ignore[arg-type]
    loaded = smtrain.load(BASE)
    assert smtrain.load(loaded) is loaded
    with pytest.raises(TypeError):
        smtrain.load(loaded, {"compute.nodes": 2})


def test_every_error_is_a_user_error_with_its_exit_code() -> None:
    from smtrain.jobs import JobInfo

    job = JobInfo(name="j", backend="sagemaker", status="InProgress")
    errors = [
        (smtrain.SpecError([Problem(("compute",), "bad")]), exit_codes.USAGE),
        (smtrain.CatalogError("bad catalog"), exit_codes.USAGE),
        (smtrain.AwsError("AWS said no"), exit_codes.API),
        (smtrain.PreflightError("1 preflight error", []), exit_codes.USAGE),
        (smtrain.WaitTimeout(job, 5), exit_codes.TIMEOUT),
    ]
    for error, code in errors:
        assert isinstance(error, smtrain.UserError), type(error)
        assert error.code == code, type(error)
    assert (exit_codes.USAGE, exit_codes.API, exit_codes.TIMEOUT) == (2, 4, 124)
    assert str(smtrain.WaitTimeout(job, 5)) == "j is still InProgress after 5s"


def test_an_override_key_that_names_no_field_is_refused_in_python_s_words() -> None:
    with pytest.raises(TypeError, match="dotted path"):
        smtrain.load(BASE, {3: 3})
    with pytest.raises(smtrain.SpecError) as caught:
        smtrain.load(BASE, {"compute..nodes": 3})
    assert str(caught.value) == "(top level): overrides['compute..nodes'] = 3: name a field by its dotted path, " \
        "such as compute.nodes"
