"""Write smtrain/plan/data/tf_registries.yaml from the SageMaker SDKs' own tables (`make tf-registries`).

Run it with the project's .venv (SDK v2 and botocore installed there): it reads SDK v2's
image_uri_config/tensorflow.json ("training"), the tag suffixes image_uris.py adds on p4d or with
smdistributed (read from its code with ast, nothing imported), SDK v3's table in the env of its own
(tests.support.sdk_envs: the versions v2 lacks) and the ECR host of every region from botocore's endpoint
data, then writes the facts in smtrain's own compact form. smtrain reads only that file at run time;
tests/plan/test_tf_registries_sdk.py holds it equal to both SDKs.

    .venv/bin/python -m tests.tools.tf_registries           # rewrite the file
    .venv/bin/python -m tests.tools.tf_registries --check   # exit 1 if the file differs from what it would write
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import ROOT
from tests.support.sdk_envs import EnvBuildError, build_sdk_v3_env

OUT = ROOT / "smtrain" / "plan" / "data" / "tf_registries.yaml"
# Run in SDK v3's env: its TensorFlow training table, and with "uris" each URI its image_uris.retrieve renders
# for every version (short and full), Python version and region of the table, on a GPU and a CPU type. The
# SDK re-reads its JSON and botocore's endpoint data on every call (~90 ms): both loads are memoized, the
# logic that composes the URI is left as it is.
_V3_DUMP = """
import functools, importlib.metadata, json, logging, sys
from sagemaker.core import common_utils, image_uris
logging.disable(logging.WARNING)
common_utils._botocore_resolver = functools.lru_cache(None)(common_utils._botocore_resolver)
image_uris.config_for_framework = functools.lru_cache(None)(image_uris.config_for_framework)
table = image_uris.config_for_framework("tensorflow")["training"]
uris = {}
for version in ([*table["versions"], *table["version_aliases"]] if "uris" in sys.argv else []):
    cfg = table["versions"][table["version_aliases"].get(version, version)]
    for py in cfg["py_versions"] if "repository" in cfg else list(cfg):
        for region in (cfg if "repository" in cfg else cfg[py])["registries"]:
            for kind, instance in (("gpu", "ml.g5.xlarge"), ("cpu", "ml.c5.xlarge")):
                uris["|".join((version, py, region, kind))] = image_uris.retrieve(
                    "tensorflow", region, version=version, py_version=py, instance_type=instance,
                    image_scope="training")
print(json.dumps({"version": importlib.metadata.version("sagemaker-core"), "training": table, "uris": uris}))
"""


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, f"{name} is not installed in this Python"
    return Path(next(iter(spec.submodule_search_locations)))


def _v2_table() -> dict[str, Any]:
    return json.loads((_package_dir("sagemaker") / "image_uri_config" / "tensorflow.json").read_text())["training"]


def _v2_tag_suffixes() -> dict[str, str]:
    """image_uris._get_image_tag's `container_versions` literal, TensorFlow's keys, "tensorflow-" dropped."""
    tree = ast.parse((_package_dir("sagemaker") / "image_uris.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["container_versions"]:
            table = ast.literal_eval(node.value)
            return {k.removeprefix("tensorflow-"): v for k, v in table.items() if k.startswith("tensorflow-")}
    raise SystemExit("image_uris.py has no `container_versions` table any more: read _get_image_tag again")


def sdk_v3_dump(python: Path, uris: bool = False) -> dict[str, Any]:
    """SDK v3's TensorFlow training table (`training`), its sagemaker-core `version` and, with `uris`, the URIs
    it renders ("version|py|region|gpu" -> URI), read by running `python` (the v3 env's)."""
    done = subprocess.run([str(python), "-c", _V3_DUMP, *(["uris"] if uris else [])], capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"SDK v3's env could not read its table:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _v3_table() -> dict[str, Any]:
    try:
        python = build_sdk_v3_env()
    except EnvBuildError as exc:
        raise SystemExit(f"SDK v3's table is needed too and its env could not be built: {exc}") from None
    return sdk_v3_dump(python)


def _entries(table: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """full version -> py version -> its entry (repository, registries); the SDK's per-Python split flattened."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for version, cfg in table["versions"].items():
        if "repository" in cfg:
            out[version] = {py: cfg for py in cfg["py_versions"]}
        else:  # 1.13.1: a repository per Python version
            out[version] = dict(cfg)
    return out


def _domains(regions: set[str]) -> dict[str, list[str]]:
    """ECR domain -> regions, from the hostname botocore gives the region's ECR endpoint (as the SDK asks it)."""
    import botocore.loaders
    import botocore.regions

    resolver = botocore.regions.EndpointResolver(botocore.loaders.create_loader().load_data("endpoints"))
    out: dict[str, list[str]] = {}
    for region in sorted(regions):
        host = (resolver.construct_endpoint("ecr", region) or {}).get("hostname", "")
        prefix = f"ecr.{region}."
        if not host.startswith(prefix):
            raise SystemExit(f"botocore gives ECR in {region} the host {host!r}, not ecr.{region}.<domain>")
        out.setdefault(host[len(prefix):], []).append(region)
    return dict(sorted(out.items(), key=lambda kv: -len(kv[1])))


def _flow(items: dict[str, Any] | list[Any]) -> str:
    if isinstance(items, list):
        return "[" + ", ".join(map(str, items)) + "]"
    return "{" + ", ".join(f"{k}: {_flow(v) if isinstance(v, (dict, list)) else v}" for k, v in items.items()) + "}"


def _version_line(version: str, per_py: dict[str, dict[str, Any]], accounts: dict[str, dict[str, str]]) -> str:
    def one(cfg: dict[str, Any]) -> dict[str, Any]:
        missing = sorted(set(accounts[cfg["repository"]]) - set(cfg["registries"]))
        return {"repository": cfg["repository"], **({"except": missing} if missing else {})}

    shapes = {json.dumps(one(cfg)) for cfg in per_py.values()}
    if len(shapes) == 1:
        entry = {"py": list(per_py), **one(next(iter(per_py.values())))}
    else:
        entry = {"by_py": {py: one(cfg) for py, cfg in per_py.items()}}
    return f'  "{version}": {_flow(entry)}'


HEADER = """\
# The registries of SageMaker's TensorFlow training images: per region the account and the ECR domain, per
# version the repository, Python versions and regions. smtrain renders every image URI from this file
# (smtrain/plan/tf_registries.py); no SDK is read when it runs.
#
# Written by tests/tools/tf_registries.py (`make tf-registries`); do not edit by hand. Sources:
#   versions     the SageMaker Python SDK v2's image_uri_config/tensorflow.json ("training"), sagemaker {v2}
#   newer        versions only SDK v3's table has: sagemaker-core {v3}, sagemaker/core/image_uri_config/
#                tensorflow.json; their tags come from smtrain's own table (tf_images.yaml)
#   accounts     both tables, merged: an account per repository and region (the tables never disagree)
#   gpu_tag_suffixes  SDK v2's image_uris._get_image_tag: added to a GPU tag on ml.p4d* or with smdistributed
#   domains      botocore {botocore} data/endpoints.json: ECR's host in the region is ecr.<region>.<domain>,
#                which is what the SDK asks botocore for
# The URI, as SDK v2's image_uris.retrieve composes it:
#   <account>.dkr.ecr.<region>.<domain>/<repository>:<version as written>-<gpu|cpu>-<py>[-<suffix>]
# A version's regions: every region of its repository's account map but those under `except`.
"""


def render() -> str:
    v2, v3 = _v2_table(), _v3_table()
    v2_entries, v3_entries = _entries(v2), _entries(v3["training"])
    accounts: dict[str, dict[str, str]] = {}
    for entries in (v2_entries, v3_entries):
        for per_py in entries.values():
            for cfg in per_py.values():
                for region, account in cfg["registries"].items():
                    known = accounts.setdefault(cfg["repository"], {}).setdefault(region, account)
                    if known != account:
                        raise SystemExit(f"{cfg['repository']} in {region}: accounts {known} and {account}")
    newer = {v: e for v, e in v3_entries.items() if v not in v2_entries}
    aliases = {**v2["version_aliases"],
               **{k: v for k, v in v3["training"]["version_aliases"].items() if v in newer}}
    regions = {r for m in accounts.values() for r in m}
    lines = [HEADER.format(v2=importlib.metadata.version("sagemaker"), v3=v3["version"],
                           botocore=importlib.metadata.version("botocore")), "domains:"]
    lines += [f"  {domain}: {_flow(rs)}" for domain, rs in _domains(regions).items()]
    lines += ["", "accounts:"]
    for repository in sorted(accounts, key=lambda r: -len(accounts[r])):
        lines.append(f"  {repository}:")
        lines += [f'    {region}: "{account}"' for region, account in sorted(accounts[repository].items())]
    lines += ["", "aliases: " + _flow({f'"{k}"': f'"{v}"' for k, v in aliases.items()}), "", "versions:"]
    lines += [_version_line(v, e, accounts) for v, e in v2_entries.items()]
    lines += ["", "newer:"] + [_version_line(v, e, accounts) for v, e in newer.items()]
    lines += ["", "gpu_tag_suffixes:"] + [f'  "{k}": {v}' for k, v in _v2_tag_suffixes().items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT.relative_to(ROOT)} is {'up to date' if same else 'out of date: run make tf-registries'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
