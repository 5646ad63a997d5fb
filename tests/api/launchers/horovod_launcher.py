import sagemaker
from sagemaker.tensorflow import TensorFlow

role = sagemaker.get_execution_role()

estimator = TensorFlow(
    entry_point="train.py",
    source_dir="code",
    role=role,
    instance_count=2,
    instance_type="ml.g5.12xlarge",
    framework_version="2.12",
    py_version="py310",
    distribution={"mpi": {"enabled": True, "processes_per_host": 4, "custom_mpi_options": "-verbose -x NCCL_DEBUG=INFO"}},
    output_path="s3://my-bucket/jobs",
)
estimator.fit({"train": "s3://my-bucket/data/train", "test": "s3://my-bucket/data/test"})
