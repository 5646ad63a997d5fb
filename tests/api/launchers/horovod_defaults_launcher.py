from sagemaker.tensorflow import TensorFlow

TensorFlow(
    entry_point="train.py", source_dir="code", role="arn:aws:iam::123456789012:role/SageMakerRole",
    instance_count=1, instance_type="ml.g5.xlarge", framework_version="2.12", py_version="py310",
    distribution={"mpi": {"enabled": True}}, output_path="s3://my-bucket/jobs",
).fit("s3://my-bucket/data/train")
