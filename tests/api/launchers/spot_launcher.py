import sagemaker
from sagemaker.inputs import TrainingInput
from sagemaker.tensorflow import TensorFlow

bucket = "my-bucket"
prefix = "spot-mnist"
MAX_RUN = 60 * 60
estimator = TensorFlow(
    entry_point="train.py",
    source_dir="code",
    role=sagemaker.get_execution_role(),
    instance_count=1,
    instance_type="ml.g5.4xlarge",
    framework_version="2.16",
    py_version="py310",
    use_spot_instances=True,
    max_run=MAX_RUN,
    max_wait=2 * MAX_RUN,
    checkpoint_s3_uri=f"s3://{bucket}/{prefix}/checkpoints",
    checkpoint_local_path="/opt/ml/checkpoints/spot",
    output_path=f"s3://{bucket}/{prefix}/output",
)
train = TrainingInput(f"s3://{bucket}/{prefix}/train", distribution="ShardedByS3Key", input_mode="FastFile")
estimator.fit(inputs={"train": train, "eval": TrainingInput(s3_data=f"s3://{bucket}/{prefix}/eval")})
