"""The Python API's arguments, checked as the CLI's options: the kinds each takes, a clear TypeError for another
kind, a UserError (exit 2) for a value that means nothing, at the limits and past them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import smtrain
from smtrain.api.arguments import flag_arg, limit_arg, since_arg, timeout_arg


def test_since_takes_what_people_pass() -> None:
    now = dt.datetime.now(dt.timezone.utc)
    aware = dt.datetime(2026, 11, 1, 12, tzinfo=dt.timezone.utc)
    assert since_arg(aware) == aware
    naive = dt.datetime(2026, 11, 1, 12)
    assert since_arg(naive) == naive.astimezone() and since_arg(naive).tzinfo is not None  # local time
    assert since_arg(dt.date(2026, 11, 1)) == dt.datetime(2026, 11, 1).astimezone()
    assert abs(since_arg(dt.timedelta(days=2)) - (now - dt.timedelta(days=2))) < dt.timedelta(minutes=1)
    assert abs(since_arg("2d") - (now - dt.timedelta(days=2))) < dt.timedelta(minutes=1)
    assert since_arg("2026-11-01") == dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    assert since_arg(None) is None
    with pytest.raises(TypeError, match="since takes a datetime"):
        since_arg(5)
    with pytest.raises(smtrain.UserError) as info:
        since_arg("last tuesday")
    assert info.value.code == 2 and "is neither a duration" in str(info.value)


@pytest.mark.parametrize("value, ok", [(1, True), (0, False), (-1, False), (200, True)])
def test_limit_at_and_past_its_bound(value: int, ok: bool) -> None:
    if ok:
        assert limit_arg(value) == value
    else:
        with pytest.raises(smtrain.UserError):
            limit_arg(value)


@pytest.mark.parametrize("value", ["x", 2.5, True, None])
def test_limit_of_another_kind(value: object) -> None:
    with pytest.raises(TypeError, match="limit takes a whole number"):
        limit_arg(value)


def test_timeout_takes_seconds_or_durations() -> None:
    assert timeout_arg(0) == 0.0 and timeout_arg(1.5) == 1.5 and timeout_arg("10m") == 600.0 and timeout_arg(None) is None
    for bad in (-1, float("nan")):
        with pytest.raises(smtrain.UserError):
            timeout_arg(bad)
    with pytest.raises(smtrain.UserError):
        timeout_arg("abc")
    with pytest.raises(TypeError):
        timeout_arg([5])


def test_flags_are_booleans() -> None:
    assert flag_arg(True, "local") is True
    with pytest.raises(TypeError, match="local takes True or False, not 'yes'"):
        flag_arg("yes", "local")


def test_the_public_calls_check_their_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTRAIN_HOME", str(tmp_path / "home"))
    assert smtrain.list_jobs(local=True, since=dt.datetime(2026, 1, 1)) == []  # naive: was a TypeError inside
    assert smtrain.list_jobs(local=True, since="2d", limit=1) == []
    assert smtrain.list_jobs(local=True, since=dt.timedelta(hours=1)) == []
    with pytest.raises(TypeError, match="limit takes a whole number"):
        smtrain.list_jobs(local=True, limit="x")
    with pytest.raises(TypeError, match="local takes True or False"):
        smtrain.submit({"name": "x"}, local="yes")
    with pytest.raises(smtrain.UserError, match="timeout"):
        smtrain.submit({"name": "x"}, timeout="abc")
    with pytest.raises(TypeError, match="overrides take a mapping"):
        smtrain.load({"name": "x"}, overrides=5)


@pytest.mark.parametrize("count, refused", [(4997, False), (4998, True)])  # 5 + 2 x count values: 9,999 and 10,001
def test_a_spec_mapping_is_bounded_as_a_yaml_file_is(tmp_path: Path, count: int, refused: bool) -> None:
    import yaml

    data = {"name": "x", "hyperparameters": {f"k{i}": i for i in range(count)}}
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(data))
    for source in (data, path):  # the mapping is counted before it is written out, as the file's reader counts
        with pytest.raises(smtrain.SpecError) as info:
            smtrain.load(source)
        said = " ".join(p.message for p in info.value.problems)
        assert ("more than 10000 values" in said) == refused, said[:300]


def test_a_huge_spec_mapping_is_refused_before_it_is_read() -> None:
    with pytest.raises(smtrain.SpecError) as info:
        smtrain.load({"name": "x", "hyperparameters": {f"k{i}": i for i in range(200_000)}})
    assert [p.message for p in info.value.problems] == [
        "the spec holds more than 10000 values: a job spec has about 100"]
