"""smtrain's table of SageMaker's TensorFlow training images (data/tf_images.yaml) and the URIs it renders.

The SageMaker SDK v2 stops at TensorFlow 2.19; AWS ships newer images. The table gives each image's facts
(Python, CUDA, tag, GA and end-of-patch dates, with their sources); an image's URI is the table's fully
qualified tag in the registry of the region that smtrain's registry data (tf_registries.py) gives the version.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml

from smtrain.plan.distribution import version_tuple
from smtrain.plan.tf_registries import ImageRepo, load_registries

_BUNDLED = Path(__file__).parent / "data" / "tf_images.yaml"
TABLE_LABEL = "smtrain/plan/data/tf_images.yaml"


@dataclass(frozen=True)
class TfImage:
    """One TensorFlow training image (GPU) as the table gives it; None marks a fact nobody confirmed."""

    version: str  # "2.21.0"
    short: str  # "2.21": what a spec writes
    python: str  # "py312"
    cuda: str | None
    os: str | None
    tag: str
    ga: date | None
    end_of_patch: date | None
    source: str

    def patched_on(self, today: date) -> bool | None:
        """Whether AWS still patches the image on `today`; None where its end of patches is unknown."""
        return None if self.end_of_patch is None else today <= self.end_of_patch


@dataclass(frozen=True)
class TfImageTable:
    repository: str
    images: tuple[TfImage, ...]  # newest first
    no_image: dict[str, str]  # version -> why AWS has no training image for it

    def find(self, version: str | None) -> TfImage | None:
        """The row for "2.21" or "2.21.0"; None if the table has none."""
        return next((i for i in self.images if version in (i.short, i.version)), None)

    def versions(self) -> list[str]:
        """The short versions, newest first."""
        return [i.short for i in self.images]

    def newest_patched(self, today: date) -> TfImage:
        """The newest image out and still patched on `today` (the newest of all if none is)."""
        return next((i for i in self.images if i.patched_on(today) and (i.ga is None or i.ga <= today)),
                    self.images[0])


def _date(value: object) -> date | None:
    return None if value is None else date.fromisoformat(str(value))


@functools.lru_cache(maxsize=1)
def load_table() -> TfImageTable:
    """The bundled table, newest version first."""
    data = yaml.safe_load(_BUNDLED.read_text(encoding="utf-8"))
    rows = [TfImage(str(r["version"]), str(r["short"]), r["python"], r.get("cuda"), r.get("os"), r["tag"],
                    _date(r.get("ga")), _date(r.get("end_of_patch")), " ".join(str(r["source"]).split()))
            for r in data["images"]]
    rows.sort(key=lambda i: version_tuple(i.version), reverse=True)
    no_image = {str(k): " ".join(str(v).split()) for k, v in (data.get("no_image") or {}).items()}
    return TfImageTable(data["repository"], tuple(rows), no_image)


def _registry(image: TfImage) -> ImageRepo | None:
    return load_registries().entry(image.version, image.python)


def image_regions(image: TfImage | None = None) -> list[str]:
    """The regions holding `image` (default: the table's newest), by smtrain's registry data."""
    entry = _registry(image or load_table().images[0])
    return sorted(entry.regions) if entry else []


def image_uri(image: TfImage, region: str) -> str | None:
    """The URI of `image` in `region`, or None where the registry data has no such image there."""
    entry = _registry(image)
    return None if entry is None else load_registries().uri(entry, region, image.tag)
