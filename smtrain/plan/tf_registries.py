"""Where SageMaker's TensorFlow training images live (data/tf_registries.yaml): per region the registry account and
the ECR domain, per version the repository, Python versions and regions, and the URI composed from them.

The data is a copy of the SageMaker SDKs' own tables (v2's image_uri_config/tensorflow.json, v3's for the versions
v2 lacks) and of botocore's ECR hosts, written by tests/tools/tf_registries.py and held equal to both SDKs by the
tests; nothing is read from an SDK or botocore at run time.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_BUNDLED = Path(__file__).parent / "data" / "tf_registries.yaml"
REGISTRIES_LABEL = "smtrain/plan/data/tf_registries.yaml"
# SDK v2's utils.get_instance_type_family: "ml.<family>.<size>" (or "ml_<family>").
_FAMILY = re.compile(r"^ml[._]([a-z\d\-]+)\.?\w*$")


@dataclass(frozen=True)
class ImageRepo:
    """The images of one TensorFlow version for one Python version: their repository and the regions holding it."""

    repository: str
    regions: frozenset[str]


@dataclass(frozen=True)
class Registries:
    domains: dict[str, str]  # region -> ECR domain ("amazonaws.com", "amazonaws.com.cn", "c2s.ic.gov", ...)
    accounts: dict[str, dict[str, str]]  # repository -> region -> the account whose registry holds it
    aliases: dict[str, str]  # short version -> full ("2.19" -> "2.19.0")
    versions: dict[str, dict[str, ImageRepo]]  # SDK v2's table: full version -> Python version -> images
    newer: dict[str, dict[str, ImageRepo]]  # only SDK v3's table: registries for smtrain's own rows (2.21)
    gpu_tag_suffixes: dict[str, str]  # "2.3-gpu-py37" -> what SDK v2 appends on ml.p4d* or with smdistributed

    def entry(self, version: str, python: str | None) -> ImageRepo | None:
        """The images of `version` (short or full, either table) for `python`; None if there are none."""
        full = self.aliases.get(version, version)
        per_py = self.versions.get(full) or self.newer.get(full) or {}
        return per_py.get(python) if python else None

    def uri(self, entry: ImageRepo, region: str, tag: str) -> str | None:
        """`entry`'s image tagged `tag` in `region`, as SDK v2 composes it (image_uris.ECR_URI_TEMPLATE with
        botocore's ECR host); None where the region does not hold it."""
        domain = self.domains.get(region)
        if region not in entry.regions or domain is None:
            return None
        return f"{self.accounts[entry.repository][region]}.dkr.ecr.{region}.{domain}/{entry.repository}:{tag}"


def _images(cfg: dict[str, Any], accounts: dict[str, dict[str, str]]) -> dict[str, ImageRepo]:
    def one(c: dict[str, Any]) -> ImageRepo:
        return ImageRepo(c["repository"], frozenset(accounts[c["repository"]]) - set(c.get("except") or ()))

    if "by_py" in cfg:
        return {py: one(c) for py, c in cfg["by_py"].items()}
    return dict.fromkeys(cfg["py"], one(cfg))


@functools.lru_cache(maxsize=1)
def load_registries() -> Registries:
    """The bundled data."""
    # libyaml where PyYAML has it: the pure-Python loader takes ~40 ms on this file, a cost every `plan` pays.
    data = yaml.load(_BUNDLED.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    accounts = {repo: {r: str(a) for r, a in m.items()} for repo, m in data["accounts"].items()}
    return Registries(
        domains={region: domain for domain, regions in data["domains"].items() for region in regions},
        accounts=accounts,
        aliases={str(k): str(v) for k, v in data["aliases"].items()},
        versions={str(v): _images(cfg, accounts) for v, cfg in data["versions"].items()},
        newer={str(v): _images(cfg, accounts) for v, cfg in (data.get("newer") or {}).items()},
        gpu_tag_suffixes={str(k): str(v) for k, v in (data.get("gpu_tag_suffixes") or {}).items()})


def instance_family(instance_type: str) -> str:
    """"p4d" for "ml.p4d.24xlarge"; "" for what is no SageMaker instance type."""
    match = _FAMILY.match(instance_type)
    return match[1] if match else ""


def processor(instance_type: str) -> str | None:
    """The image flavour SDK v2 picks for `instance_type` (image_uris._processor): "gpu" for the ml.g* and ml.p*
    families, "cpu" for the others; None for Inferentia/Trainium and what is no instance type (no image)."""
    family = instance_family(instance_type)
    if not family or family.startswith(("inf", "trn")):
        return None
    return "gpu" if family[0] in ("g", "p") else "cpu"
