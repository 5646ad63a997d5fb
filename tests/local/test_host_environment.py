"""A host process's environment: this machine's, less what would tell it about another job or set smtrain's own
settings (README: the shell's SMTRAIN_* never reach a host; on SageMaker only the request's Environment does),
then the request's Environment and what SageMaker and the toolkit set. Tested with the variables set."""

from __future__ import annotations

from pathlib import Path

from smtrain.local.contract import HostLayout, process_environment


def test_the_shells_job_variables_are_scrubbed_and_the_requests_are_kept(tmp_path: Path) -> None:
    shell = {"PATH": "/usr/bin", "HOME": "/home/me", "SMTRAIN_EPOCHS": "9", "SMTRAIN_WRAP_BATCH": "global",
             "SM_MODEL_DIR": "/elsewhere", "SAGEMAKER_PROGRAM": "other.py", "OMPI_COMM_WORLD_RANK": "3",
             "PMI_RANK": "3", "PMIX_RANK": "3", "TF_CONFIG": '{"cluster": {}}', "TRAINING_JOB_NAME": "other-job",
             "TRAINING_JOB_ARN": "arn:other", "CURRENT_HOST": "algo-9", "SMTRAINX": "kept"}
    env = process_environment(shell, {"SM_CURRENT_HOST": "algo-1", "SM_MODEL_DIR": "/opt/ml/model"},
                              {"SMTRAIN_WRAP_BATCH": "per_replica"}, HostLayout(tmp_path), job_name="mine",
                              region="us-east-1", tf_config=None)
    assert "SMTRAIN_EPOCHS" not in env and "OMPI_COMM_WORLD_RANK" not in env and "PMI_RANK" not in env
    assert "PMIX_RANK" not in env and "TF_CONFIG" not in env and "TRAINING_JOB_ARN" not in env
    assert env["SMTRAIN_WRAP_BATCH"] == "per_replica"  # the request's, not the shell's
    assert env["SM_MODEL_DIR"] == "/opt/ml/model" and env["TRAINING_JOB_NAME"] == "mine"
    assert env["CURRENT_HOST"] == "algo-1" and env.get("SAGEMAKER_PROGRAM") != "other.py"
    assert (env["PATH"], env["HOME"], env["SMTRAINX"]) == ("/usr/bin", "/home/me", "kept")
