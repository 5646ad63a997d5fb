from sagemaker.inputs import FileSystemInput
from sagemaker.tensorflow import TensorFlow

fsx = FileSystemInput(file_system_id="fs-0123456789abcdef0", file_system_type="FSxLustre",
                      directory_path="/abcdefgh/mnist", file_system_access_mode="ro")
estimator = TensorFlow(
    entry_point="train.py",
    source_dir="code",
    role="arn:aws:iam::123456789012:role/SageMakerRole",
    instance_count=1,
    instance_type="ml.g5.xlarge",
    framework_version="2.16",
    py_version="py310",
    subnets=["subnet-0abc1234"],
    security_group_ids=["sg-0abc1234"],
    output_path="s3://my-bucket/fsx",
)
estimator.fit({"train": fsx, "test": "s3://my-bucket/data/test"})
