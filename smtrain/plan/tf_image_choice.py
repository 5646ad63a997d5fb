"""Which TensorFlow training image a spec gets: version (the newest patched one when the spec names none),
Python, the image URI and where it comes from, the problems with that choice and the end-of-patch warning.

Where it comes from, in this order: the spec's own tensorflow.image_uri ("spec"); for a version the SageMaker
SDK v2's image table knows, that table ("sdk": smtrain's copy of it, data/tf_registries.yaml, rendered as the
SDK's image_uris.retrieve renders it, tag "2.19-gpu-py312"); smtrain's table for a newer one ("smtrain table":
its fully qualified tag in the registry SDK v3's table gives the version). smtrain renders every URI itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime, timezone
from typing import Any

from smtrain.plan.distribution import version_tuple
from smtrain.plan.tf_images import TABLE_LABEL, TfImage, TfImageTable, image_regions, image_uri, load_table
from smtrain.plan.tf_registries import REGISTRIES_LABEL
from smtrain.plan.tf_versions import default_py_version, known_tf_versions, tf_py_versions
from smtrain.plan.tf_versions import image_regions as sdk_image_regions
from smtrain.plan.tf_versions import image_uri as sdk_image_uri
from smtrain.spec.model import LoadedSpec
from smtrain.spec.problems import Problem

SPEC, SDK, TABLE = "spec", "sdk", "smtrain table"


@dataclass(frozen=True)
class TfChoice:
    version: str | None  # framework_version, as the spec writes it ("2.21")
    python: str | None  # py_version
    image_uri: str | None  # None: none could be found (a problem says why), or the spec has no region
    source: str  # SPEC | SDK | TABLE: where the image (and the data its URI is rendered from) comes from
    defaulted: bool = False  # the spec named no version: smtrain chose the newest patched one
    image: TfImage | None = None  # smtrain's row for the version, where it has one
    patched: bool | None = None  # whether AWS still patches the image on the plan's day; None: no facts (own image)

    def summary(self) -> dict[str, Any]:
        """The `tensorflow` keys of `smtrain plan --output json`."""
        row = self.image if self.source != SPEC else None
        eop = row.end_of_patch.isoformat() if row and row.end_of_patch else None
        return {"version": self.version, "python": self.python, "image_uri": self.image_uri,
                "image_source": self.source, "version_defaulted": self.defaulted,
                "cuda": row.cuda if row else None, "end_of_patch": eop, "patched": self.patched}


def today_utc() -> date:
    return datetime.now(timezone.utc).date()


def default_version(today: date | None = None) -> str:
    """The version a spec without tensorflow.version and image_uri gets: the newest image AWS still patches."""
    return load_table().newest_patched(today or today_utc()).short


def _advice(table: TfImageTable, today: date) -> str:
    newest = table.newest_patched(today)
    if not newest.patched_on(today):
        return (f"smtrain's table knows no image still patched on {today} (the newest, {newest.short}, ended "
                f"{newest.end_of_patch}): update smtrain")
    return f"move to {newest.short} (patched until {newest.end_of_patch})"


def patch_warning(version: str, today: date) -> str | None:
    """Why `version`'s training image no longer gets AWS's patches, and what to move to; None while it does."""
    table = load_table()
    row = table.find(version)
    if row is not None and row.patched_on(today):
        return None
    if row is not None and row.end_of_patch is not None:
        return (f"TensorFlow {version}'s training image stopped getting AWS's security patches on "
                f"{row.end_of_patch} (DLC support policy); {_advice(table, today)}")
    if row is None and version_tuple(version) > version_tuple(table.images[0].version):
        return None  # newer than the table: nothing known either way
    # The DLC support policy patches only the versions it lists as supported; smtrain's table holds every
    # one it lists, with its date, so a version without a date is not among them.
    return (f"TensorFlow {version}'s training image no longer gets AWS's security patches (the DLC support "
            f"policy does not list it as supported; smtrain knows no end-of-patch date); {_advice(table, today)}")


def _available(table: TfImageTable, today: date) -> str:
    sdk_short = [v for v in known_tf_versions() if v.count(".") == 1]
    oldest = version_tuple(table.images[-1].short)
    recent = sorted({*table.versions(), *(v for v in sdk_short if version_tuple(v) >= oldest)},
                    key=version_tuple, reverse=True)
    default = table.newest_patched(today).short
    shown = [f"{v} (the default)" if v == default else v for v in recent]
    older = sorted((v for v in sdk_short if version_tuple(v) < oldest), key=version_tuple)
    return ", ".join(shown) + (f"; older ones from the SageMaker SDK's table, {older[0]} to {older[-1]}" if older else "")


def _unknown(loaded: LoadedSpec, version: str, table: TfImageTable, today: date) -> Problem:
    why = table.no_image.get(version, f"neither the SageMaker SDK's table ({REGISTRIES_LABEL}) nor smtrain's "
                                      f"table ({TABLE_LABEL}) knows one")
    return loaded.problem(("tensorflow", "version"), f"no TensorFlow {version} training image: {why}. Available: "
                          f"{_available(table, today)}; give tensorflow.image_uri to use another image")


def _sdk_problems(loaded: LoadedSpec, version: str, python: str | None, instance_type: str | None) -> list[Problem]:
    out = []
    known = tf_py_versions()[version]
    if python and python not in known:
        return [loaded.problem(("tensorflow", "python"), f"TensorFlow {version} images exist for "
                                                         f"{', '.join(known)}, not {python}")]
    regions = sdk_image_regions(version, python)
    if loaded.region and regions and loaded.region not in regions:
        where = ("region",) if loaded.spec.region else ("tensorflow", "version")
        out.append(loaded.problem(where, f"the SageMaker SDK's table has no TensorFlow {version} {python} training "
                                         f"image in {loaded.region} (it has them in {', '.join(regions)}); give "
                                         "tensorflow.image_uri to use another image"))
    elif loaded.region and instance_type and python and sdk_image_uri(version, python, loaded.region,
                                                                      instance_type) is None:
        out.append(loaded.problem(("compute", "instance_type"), f"SageMaker has no TensorFlow training image for "
                                                                f"{instance_type}; give tensorflow.image_uri"))
    return out


def _table_problems(loaded: LoadedSpec, row: TfImage, uri: str | None) -> list[Problem]:
    out = []
    python = loaded.spec.tensorflow.python
    if python and python != row.python:
        out.append(loaded.problem(("tensorflow", "python"), f"the TensorFlow {row.short} training image has "
                                                            f"{row.python}, not {python}"))
    if loaded.region and uri is None:
        where = ("region",) if loaded.spec.region else ("tensorflow", "version")
        regions = image_regions(row)
        has = f"it has them in {', '.join(regions)}" if regions else f"{REGISTRIES_LABEL} has no registry for it"
        out.append(loaded.problem(where, f"smtrain knows no registry for TensorFlow {row.short} training images in "
                                         f"{loaded.region} ({has}); give tensorflow.image_uri to use another image"))
    return out


def choose_image(loaded: LoadedSpec, today: date | None = None, instance_type: str | None = None
                 ) -> tuple[TfChoice, list[Problem], list[Problem]]:
    """(the image choice, problems, warnings) for the spec; `today` decides what is still patched, `instance_type`
    (the job's) the processor in an SDK-table image's tag. for_distribution() finishes that URI for smdistributed."""
    today = today or today_utc()
    tf, table = loaded.spec.tensorflow, load_table()
    if tf.image_uri:
        return TfChoice(tf.version, tf.python, tf.image_uri, SPEC, image=table.find(tf.version)), [], []
    version = tf.version or default_version(today)
    row = table.find(version)
    if version in tf_py_versions():
        python = tf.python or default_py_version(version)
        uri = (sdk_image_uri(version, python, loaded.region, instance_type)
               if loaded.region and instance_type and python else None)
        choice = TfChoice(version, python, uri, SDK, tf.version is None, row)
        problems = _sdk_problems(loaded, version, python, instance_type)
    elif row is not None:
        uri = image_uri(row, loaded.region) if loaded.region else None
        choice = TfChoice(version, row.python, uri, TABLE, tf.version is None, row)
        problems = _table_problems(loaded, row, uri)
    else:
        return TfChoice(version, tf.python, None, TABLE), [_unknown(loaded, version, table, today)], []
    warning = patch_warning(version, today)
    choice = replace(choice, patched=warning is None)
    where = ("tensorflow", "version") if tf.version else ("tensorflow",)
    return choice, problems, [loaded.problem(where, warning)] if warning else []


def for_distribution(choice: TfChoice, region: str | None, instance_type: str,
                     distribution: dict[str, Any] | None) -> TfChoice:
    """`choice` for the job's SDK `distribution`: with smdistributed, SDK v2 tags a few old GPU images (TF 2.3 and
    1.15, py37: data/tf_registries.yaml gpu_tag_suffixes) with their CUDA/OS suffix on every type, not only ml.p4d*."""
    if choice.source != SDK or not region or not choice.python or "smdistributed" not in (distribution or {}):
        return choice
    return replace(choice, image_uri=sdk_image_uri(choice.version or "", choice.python, region, instance_type, True))
