"""The plan renders every TensorFlow training image URI itself, from smtrain's registry data alone: no SDK, no
botocore at run time; the SDK's tag rules (version as written, processor, the old images' CUDA/OS suffix on ml.p4d
or with smdistributed); the refusals where the data has no image. The URIs are held equal to the SDKs' in
tests/plan/test_tf_registries_sdk.py."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from smtrain.plan.build import Plan, build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.tf_image_choice import choose_image
from smtrain.plan.tf_registries import load_registries, processor
from smtrain.plan.tf_versions import image_uri
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support import ROOT
from tests.support.specfiles import write_spec

CATALOG = load_catalog()
TODAY = date(2026, 11, 23)
OWN = {"code": {"source_dir": "code", "entry_point": "train.py"}}  # any version: the script is the user's


def plan_for(tmp_path: Path, changes: dict[str, Any]) -> Plan:
    (tmp_path / "code").mkdir(exist_ok=True)
    (tmp_path / "code" / "train.py").write_text("print('train')\n")
    return build_plan(load_spec(write_spec(tmp_path, changes), env={}), CATALOG, today=TODAY)


def registry(region: str = "us-east-1") -> str:
    data = load_registries()
    return f"{data.accounts['tensorflow-training'][region]}.dkr.ecr.{region}.{data.domains[region]}/tensorflow-training"


def test_the_plan_renders_the_uri_of_a_version_the_sdks_table_knows(tmp_path):
    # The tag is the version as the spec writes it: "2.19" and "2.19.0" are two tags of one image.
    short = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "tensorflow": {"version": "2.19"}})
    full = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "tensorflow": {"version": "2.19.0"}})
    assert short.image_uri == f"{registry()}:2.19-gpu-py312" and full.image_uri == f"{registry()}:2.19.0-gpu-py312"
    cn = plan_for(tmp_path, {"region": "cn-north-1", "compute": {"instance_type": "ml.g5.xlarge"},
                             "tensorflow": {"version": "2.19"}})
    assert cn.image_uri == f"{registry('cn-north-1')}:2.19-gpu-py312" and ".amazonaws.com.cn/" in cn.image_uri
    # A spec's own image is left as written.
    own = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                              "tensorflow": {"version": "2.19", "image_uri": "registry.example/tf:1"}})
    assert own.image_uri == "registry.example/tf:1"


def test_old_gpu_images_get_the_sdks_suffix_on_p4d_and_with_smdistributed(tmp_path):
    on_p4d = plan_for(tmp_path, {**OWN, "compute": {"instance_type": "ml.p4d.24xlarge"}, "tensorflow": {"version": "2.3"}})
    assert on_p4d.image_uri == f"{registry()}:2.3-gpu-py37-cu110-ubuntu18.04-v3"
    smddp = plan_for(tmp_path, {**OWN, "compute": {"instance_type": "ml.p3.16xlarge"}, "tensorflow": {"version": "2.3"},
                                "distribution": {"strategy": "smddp"}})
    assert "smdistributed" in smddp.distribution and smddp.image_uri == f"{registry()}:2.3-gpu-py37-cu110-ubuntu18.04-v3"
    plain = plan_for(tmp_path, {**OWN, "compute": {"instance_type": "ml.p3.16xlarge"}, "tensorflow": {"version": "2.3"}})
    assert plain.image_uri == f"{registry()}:2.3-gpu-py37"


def test_the_processor_comes_from_the_instance_family():
    assert [processor(t) for t in ("ml.g5.xlarge", "ml.p4d.24xlarge", "ml.c5.xlarge", "ml.trn1.2xlarge", "g5")] == [
        "gpu", "gpu", "cpu", None, None]
    assert image_uri("2.19", "py312", "us-east-1", "ml.c5.xlarge") == f"{registry()}:2.19-cpu-py312"
    # 1.13.1 has a repository per Python version, each in its own registries.
    old = image_uri("1.13", "py2", "us-east-1", "ml.c5.xlarge")
    assert old.endswith("/sagemaker-tensorflow-scriptmode:1.13-cpu-py2") and not old.startswith(registry())
    assert image_uri("1.13", "py3", "us-east-1", "ml.c5.xlarge") == f"{registry()}:1.13-cpu-py3"


def test_where_the_data_has_no_image_the_plan_says_so(tmp_path):
    with pytest.raises(SpecError) as raised:
        plan_for(tmp_path, {"region": "us-iso-east-1", "compute": {"instance_type": "ml.g5.xlarge"},
                            "tensorflow": {"version": "2.19"}})
    (message,) = [p.render() for p in raised.value.problems]
    assert "region: the SageMaker SDK's table has no TensorFlow 2.19 py312 training image in us-iso-east-1" in message
    assert "us-east-1" in message
    with pytest.raises(SpecError) as raised:
        plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                            "tensorflow": {"version": "2.19", "python": "py310"}})
    assert "TensorFlow 2.19 images exist for py312, not py310" in raised.value.problems[0].render()
    # An instance type SageMaker has no TensorFlow image for (Trainium): no URI, a problem at the type.
    loaded = load_spec(write_spec(tmp_path, {"tensorflow": {"version": "2.19"}}), env={})
    choice, problems, _ = choose_image(loaded, TODAY, "ml.trn1.32xlarge")
    assert choice.image_uri is None and "no TensorFlow training image for ml.trn1.32xlarge" in problems[0].render()


def test_planning_reads_neither_the_sdk_nor_botocore(tmp_path):
    # Both made unimportable (a None in sys.modules: import and find_spec alike see nothing installed).
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "tensorflow": {"version": "2.19"}})
    new = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}, name="new.yaml")
    script = (
        "import json, sys\n"
        "for name in ('sagemaker', 'sagemaker_core', 'botocore', 'boto3'):\n"
        "    sys.modules[name] = None\n"
        "from smtrain.plan.build import build_plan\n"
        "from smtrain.plan.catalog_files import load_catalog\n"
        "from smtrain.spec.model import load_spec\n"
        "print(json.dumps([build_plan(load_spec(p, env={}), load_catalog()).image_uri for p in sys.argv[1:]]))\n")
    done = subprocess.run([sys.executable, "-c", script, str(spec), str(new)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [f"{registry()}:2.19-gpu-py312",
                                       f"{registry()}:2.21.0-gpu-py312-cu129-amzn2023-sagemaker"]
