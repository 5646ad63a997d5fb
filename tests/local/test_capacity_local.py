"""Issue 14: `submit --local` and the SageMaker-only capacity, retry and key fields: a local run is choice 1 of
compute.prefer (its request names that type and count, as the hosts are laid out from it), and says that it
ignores the rest."""

from __future__ import annotations

from smtrain.local.request import local_request, render_local
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.render.request_limits import sagemaker_only_notes
from smtrain.spec.model import load_spec
from tests.support.specfiles import write_spec


def test_a_local_run_is_choice_one(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"prefer": [{"instance_type": "ml.g5.12xlarge", "count": 2},
                                                        {"instance_type": "ml.g5.xlarge"}],
                                             "max_pending": "1h", "max_retry_attempts": 2},
                                 "output": str(tmp_path / "out"), "training": {"data": "synthetic"}, "inputs": {}})
    plan = build_plan(load_spec(spec, env={}), load_catalog())
    body = render_local(local_request(plan, "local-capacity-job"))
    resources = body["ResourceConfig"]
    assert (resources["InstanceType"], resources["InstanceCount"]) == ("ml.g5.12xlarge", 2)
    assert "InstancePreferences" not in resources and "MaxPendingTimeInSeconds" not in body["StoppingCondition"]
    notes = sagemaker_only_notes(plan.spec)
    assert len(notes) == 3 and all("this local run ignores it" in n for n in notes)
    assert notes[0].startswith("compute.prefer (SageMaker's fallback list: a local run runs choice 1)")
