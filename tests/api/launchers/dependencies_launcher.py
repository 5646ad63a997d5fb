from sagemaker.tensorflow import TensorFlow

estimator = TensorFlow(
    entry_point="code/train.py",
    dependencies=["lib"],
    role="arn:aws:iam::123456789012:role/SageMakerRole",
    instance_count=1,
    instance_type="ml.g5.xlarge",
    framework_version="2.16",
    py_version="py310",
    output_path="s3://my-bucket/deps",
    metric_definitions=[{"Name": "loss", "Regex": "loss: ([0-9.]+)"}],
)
estimator.fit("s3://my-bucket/data/train", job_name="deps-mnist-001")
