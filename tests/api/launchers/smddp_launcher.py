from sagemaker.tensorflow import TensorFlow

estimator = TensorFlow(
    base_job_name="smddp-mnist",
    entry_point="train.py",
    source_dir="code",
    role="arn:aws:iam::123456789012:role/SageMakerRole",
    instance_count=2,
    instance_type="ml.p4d.24xlarge",
    framework_version="2.11",
    py_version="py39",
    distribution={"smdistributed": {"dataparallel": {"enabled": True}}},
    output_path="s3://my-bucket/jobs",
)
estimator.fit({"train": "s3://my-bucket/data/train"})
