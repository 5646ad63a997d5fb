"""`submit --dry-run`'s text: what it counts is what it lists."""

from __future__ import annotations

from smtrain.cli.render import dry_run_text


def _rendered(hyper: dict[str, str]) -> dict:
    request = {"AlgorithmSpecification": {"TrainingImage": "img"},
               "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
               "StoppingCondition": {"MaxRuntimeInSeconds": 3600}, "RoleArn": "arn:aws:iam::123456789012:role/R",
               "OutputDataConfig": {"S3OutputPath": "s3://b/o"}, "HyperParameters": hyper}
    return {"job_name": "j-1", "request": request,
            "upload": {"uri": "s3://b/o/source/x/sourcedir.tar.gz", "bytes": 10, "files": ["a.py"], "sha256": "0" * 64}}


def test_the_hyperparameter_count_is_the_count_listed() -> None:
    hyper = {"epochs": "3", "lr": "0.1", "model_dir": '"s3://b/o/j-1/model"', "sagemaker_program": '"train.py"',
             "sagemaker_region": '"us-east-1"'}
    line = next(li for li in dry_run_text(_rendered(hyper), "us-east-1").splitlines() if "hyperparams" in li)
    listed = line.split(": ", 1)[1].split(", ")
    assert line.split()[1] == str(len(listed)) == "3"
    assert "(+ 2 sagemaker_* of the toolkit's)" in line
    only = next(li for li in dry_run_text(_rendered({}), "us-east-1").splitlines() if "hyperparams" in li)
    assert only.strip() == "hyperparams   0"
