from sagemaker.tensorflow import TensorFlow

tags = [{"Key": "project", "Value": "mnist"}, {"Key": "cost-center", "Value": "ml-42"}]
estimator = TensorFlow(
    base_job_name="mnist-vpc",
    entry_point="train.py",
    source_dir="code",
    role="arn:aws:iam::123456789012:role/SageMakerRole",
    instance_count=2,
    instance_type="ml.g5.xlarge",
    framework_version="2.19",
    py_version="py312",
    subnets=["subnet-0abc1234", "subnet-0abc1235"],
    security_group_ids=["sg-0abc1234"],
    encrypt_inter_container_traffic=True,
    enable_network_isolation=True,
    tags=tags,
    environment={"NCCL_DEBUG": "INFO", "TF_CPP_MIN_LOG_LEVEL": "1"},
    volume_size=100,
    keep_alive_period_in_seconds=1800,
    max_retry_attempts=2,
    output_path="s3://my-bucket/vpc",
    input_mode="Pipe",
)
estimator.fit({"train": "s3://my-bucket/data/train"},
              experiment_config={"ExperimentName": "churn", "TrialName": "vpc-runs", "RunName": "pipe-1"})
