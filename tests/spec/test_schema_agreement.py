"""`smtrain schema` and the loader agree: what the loader accepts the schema accepts, and what the loader
refuses for a type, pattern, enum or range the schema refuses too, where a JSON Schema can say it.

Editors (yaml-language-server) read YAML 1.2, so the specs are handed to the schema as YAML 1.2
reads them (`yes` is text, `0o17` a number), raw, before ${VAR} is expanded. The rules no schema
can state are listed in NOT_EXPRESSIBLE, each with a spec the loader refuses and the schema lets
through, so the list stays true.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import jsonschema  # only in tests: moto[server] brings it into the test environment
import pytest
import yaml

from smtrain.spec.model import json_schema, load_spec
from smtrain.spec.problems import SpecError
from tests.spec.fuzz_corpus import FUZZ_ENV, fuzz_specs
from tests.support import ROOT
from tests.support.specfiles import BASE_TEXT as BASE

ENV = {"NODES": "2", "DATA": "s3://my-bucket/data", "TEAM": "ml"}


class Yaml12Loader(yaml.SafeLoader):
    """YAML 1.2's core schema, as editors read a file: no yes/no/on/off, no sexagesimal, no dates."""


Yaml12Loader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in [
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     "-+.0123456789"),
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("merge", r"^(?:<<)$", "<"),
]:
    Yaml12Loader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern), list(_first))
Yaml12Loader.add_constructor("tag:yaml.org,2002:int", lambda loader, node: int(loader.construct_scalar(node), 0))
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", lambda loader, node: float(
    loader.construct_scalar(node).lower().replace(".inf", "inf").replace(".nan", "nan")))


@functools.lru_cache(maxsize=1)
def validator() -> jsonschema.protocols.Validator:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(text: str) -> list[str]:
    data = yaml.load(text, Loader=Yaml12Loader)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator().iter_errors(data)]


def loader_problems(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    if not (tmp_path / "code").exists():  # the code configs/ examples name, relative to themselves
        (tmp_path / "code").symlink_to(ROOT / "configs" / "code")
    path = tmp_path / "job.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_spec(path, env=ENV)
    except SpecError as exc:
        return [p.render() for p in exc.problems]
    return []


VALID = {
    "minimal": "",
    "interpolated": "compute:\n  nodes: ${NODES:-1}\n  spot: ${SPOT:-false}\ninputs:\n  train: ${DATA}/train\n"
                    "tags:\n  ${TEAM:-team}: ml\n  owner: ${USER_NAME:-me}\n",
    "units": "compute:\n  volume_size: 1.5GiB\n  min_gpu_memory: 24GB\n  max_run: 90m\n  keep_alive: 600\n"
             "code:\n  max_bundle_size: 100mb\n",
    "flags-and-words": "compute:\n  spot: true\ncheckpoints: s3://my-bucket/ck\ntraining:\n  mixed_precision: on\n"
                       "  xla: false\n",
    "unquoted-version": "",  # BASE with 2.10 unquoted, below
    "numbers": "training:\n  learning_rate: 1e-3\n  warmup_epochs: 0.5\n  epochs: 3\n  seed: 0\n"
               "distribution:\n  strategy: none\n  processes_per_host: auto\n",
    "text-forms": "compute:\n  nodes: \"2\"\ntraining:\n  learning_rate: \"0.01\"\n  xla: \"off\"\n",
    "image": "tensorflow:\n  image_uri: 123456789012.dkr.ecr.us-east-1.amazonaws.com/img@sha256:" + "a" * 64 + "\n",
    "channels": "inputs:\n  train.v2: {uri: s3://my-bucket/t, mode: FastFile, distribution: ShardedByS3Key}\n"
                "  local: ./data\n  file: file:///tmp/x\n",
    "maps": "hyperparameters: {dropout: 0.5, name: x, on: true}\nenvironment: {A: 1, B: text, C: on}\n"
            "tags: {team: ml, cost-center: 42}\nnetwork: {subnets: [subnet-0abc1234], security_groups: [sg-0abc1234]}\n",
    "merge": "tags: &c {team: ml}\nenvironment:\n  <<: *c\n  B: x\n",
    "tensorboard-uri": "tensorboard: s3://my-bucket/tb\n",
    "tensorboard-off": "tensorboard: off\n",  # text to an editor (YAML 1.2), false to the loader
    "tensorboard-false": "tensorboard: false\n",
    "own-script": "code: {source_dir: src, entry_point: train.py, wrap: on, wrap_batch: global}\n"
                  "compute: {allow_cpu: true}\ntraining: {gradient_accumulation_steps: 4}\n"
                  "hyperparameters: {epochs: 3, learning_rate: 0.1}\n",
}


def with_section(extra: str) -> str:
    """BASE with `extra` added; a top-level key BASE has already is replaced, with its block."""
    lines = BASE.splitlines(keepends=True)
    for key in {line.split(":", 1)[0] for line in extra.splitlines() if line and not line[0].isspace()}:
        starts = [i for i, line in enumerate(lines) if line.startswith(key + ":")]
        if starts:
            end = starts[0] + 1
            while end < len(lines) and lines[end].startswith("  "):
                end += 1
            del lines[starts[0]:end]
    return "".join(lines) + extra + ("\n" if extra and not extra.endswith("\n") else "")


VALID_TEXTS = {name: with_section(extra) for name, extra in VALID.items()}
VALID_TEXTS["unquoted-version"] = BASE.replace('"2.21"', "2.10")
for path in sorted((ROOT / "configs").glob("*.yaml")):
    VALID_TEXTS[f"configs/{path.name}"] = path.read_text(encoding="utf-8")

# Refused by both, each for a rule a JSON Schema states.
REFUSED = {
    "name-pattern": "name: bad_name", "name-newline": 'name: "mnist\\n"', "name-length": "name: " + "x" * 43,
    "role": "role: SageMakerRole", "region": "region: useast1", "version": 'tensorflow: {version: "two"}',
    "python": "tensorflow: {version: \"2.19\", python: \"3.12\"}", "image": 'tensorflow: {image_uri: "a b"}',
    "nodes-type": "compute: {nodes: two}", "nodes-zero": "compute: {nodes: 0}", "nodes-max": "compute: {nodes: 101}",
    "nodes-flag": "compute: {nodes: true}", "size-unitless": "compute: {volume_size: 24}",
    "size-text": "compute: {volume_size: lots}", "max-run-zero": "compute: {max_run: 0}",
    "max-run-text": "compute: {max_run: 6x}", "max-run-seconds": "compute: {max_run: 2419201}",
    "spot-word": "compute: {spot: maybe}", "strategy": "distribution: {strategy: ring}",
    "processes": "distribution: {processes_per_host: 0}", "lr-scaling": "training: {lr_scaling: cubic}",
    "lr-zero": "training: {learning_rate: 0}", "lr-inf": "training: {learning_rate: .inf}",
    "lr-large": "training: {learning_rate: 1001}", "mode": "inputs: {train: {uri: s3://my-bucket/t, mode: Fast}}",
    "channel-dots": "inputs: {'..': s3://my-bucket/t}", "channel-space": "inputs: {'bad channel': s3://my-bucket/t}",
    "output-scheme": "output: http://example.com/x", "output-s3": "output: s3://B_ad/x",
    "checkpoints": "checkpoints: s3:/bucket", "env-name": "environment: {1BAD: x}",
    "tag-key": "tags: {'aws:owner': x}", "tag-value": "tags: {team: 'a|b'}",
    "hyper-name": "hyperparameters: {sagemaker_program: x}", "subnet": "network: {subnets: [subnet-xyz]}",
    "unknown-key": "compute: {nods: 2}", "model-newline": 'training: {model: "mlp\\n"}',
    "hyper-list": "hyperparameters: {x: [1, 2]}", "missing-name": None,
    "wrap-batch": "code: {wrap_batch: per_gpu}", "wrap-word": "code: {wrap: maybe}",
    "tensorboard": "tensorboard: s3:/bucket", "tensorboard-true": "tensorboard: true",
    "allow-cpu-word": "compute: {allow_cpu: maybe}", "accumulation-zero": "training: {gradient_accumulation_steps: 0}",
}


def _refused_text(extra: str | None) -> str:
    return BASE.replace("name: mnist\n", "") if extra is None else with_section(extra)


# Rules a JSON Schema cannot state: the loader refuses each example, the schema lets it through.
NOT_EXPRESSIBLE = {
    "cross-field: spot needs checkpoints": "compute: {spot: true}",
    "cross-field: max_wait only with spot": "compute: {max_wait: 2h}",
    "cross-field: max_wait >= max_run": "compute: {spot: true, max_run: 6h, max_wait: 1h}\ncheckpoints: s3://my-bucket/c",
    "cross-field: a training field as a hyperparameter": "hyperparameters: {epochs: 3}",
    "cross-field: wrap needs an entry point": "code: {source_dir: src, wrap: true}",
    "cross-field: wrap_batch only with wrap": "code: {source_dir: src, entry_point: train.py, wrap_batch: global}",
    "cross-field: wrap_tuning only with wrap": "code: {source_dir: src, entry_point: train.py, wrap_tuning: false}",
    "cross-field: no wrap under horovod": "code: {source_dir: src, entry_point: train.py, wrap: true}\n"
                                          "distribution: {strategy: horovod}",
    "cross-field: subnets need security groups": "network: {subnets: [subnet-0abc1234]}",
    "files on disk": "code: {source_dir: missing}",
    "the range of a duration written as text": "compute: {max_run: 29d}",
    "the range of a number written as text": "compute: {nodes: \"200\"}",
    "non-finite numbers in a free-form map": "hyperparameters: {x: .nan}",
    "what a variable expands to": "compute: {nodes: \"${UNSET_VAR}\"}",
    "an unsupported ${...} form": "environment: {A: \"${A-x}\"}",
    "non-ASCII characters outside a tag's set": "tags: {team: \"a€b\"}",
    "YAML 1.1 typing (0o17 is text to the loader)": "training: {epochs: 0o17}",
    "duplicate keys (a YAML reader keeps the last)": "region: us-east-1",
}


@pytest.mark.parametrize("name", sorted(VALID_TEXTS))
def test_valid_specs_pass_both(tmp_path, name):
    text = VALID_TEXTS[name]
    assert loader_problems(tmp_path, text) == []
    assert schema_errors(text) == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_specs_the_loader_refuses_for_a_stated_rule_the_schema_refuses(tmp_path, name):
    text = _refused_text(REFUSED[name])
    assert loader_problems(tmp_path, text), "the loader accepted it"
    assert schema_errors(text), "the schema accepted it"


@pytest.mark.parametrize("name", sorted(NOT_EXPRESSIBLE))
def test_rules_no_schema_can_state(tmp_path, name):
    text = BASE + NOT_EXPRESSIBLE[name] + "\n"
    assert loader_problems(tmp_path, text), "the loader accepted it"
    assert schema_errors(text) == [], "the schema states this rule now: move it to REFUSED"


def test_defaults_show_as_users_write_them():
    compute = json_schema()["$defs"]["ComputeSpec"]["properties"]
    assert compute["volume_size"]["default"] == "30GB" and compute["max_run"]["default"] == "1d"
    assert json_schema()["$defs"]["CodeSpec"]["properties"]["max_bundle_size"]["default"] == "100MB"
    text = str(json_schema())
    assert "30000000000" not in text and "86400" not in text


def test_every_field_the_schema_leaves_open_is_free_text():
    """No field is `{}` (anything) in the schema: each states a type."""
    schema = json_schema()
    for section in (schema, *schema["$defs"].values()):
        for name, prop in section.get("properties", {}).items():
            assert set(prop) - {"title", "description", "default"}, name


def test_fuzz_specs_the_loader_accepts_pass_the_schema(tmp_path):
    """Of the fuzz corpus, every spec the loader accepts (YAML 1.1 differences aside) passes the schema."""
    accepted = 0
    for name, text in fuzz_specs(1000, 7):
        path = tmp_path / "job.yaml"
        path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
        try:
            load_spec(path, env=FUZZ_ENV)  # first: it refuses an alias bomb before a YAML reader expands it
        except SpecError:
            continue
        try:
            data = yaml.load(text, Loader=Yaml12Loader)
            if data != yaml.safe_load(text) or not isinstance(data, dict):
                continue  # YAML 1.1 and 1.2 read this text differently: editors see another document
        except Exception:  # noqa: BLE001 - PyYAML's own constructors fail in many ways on this corpus
            continue
        accepted += 1
        assert schema_errors(text) == [], (name, text)
    assert accepted >= 100, accepted  # 215 today
