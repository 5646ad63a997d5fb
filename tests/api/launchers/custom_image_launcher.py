from sagemaker.tensorflow import TensorFlow

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-tf:2.16-gpu"
estimator = TensorFlow(
    image_uri=IMAGE,
    entry_point="train.py",
    source_dir="code",
    role="arn:aws:iam::123456789012:role/SageMakerRole",
    instance_count=1,
    instance_type="ml.g5.2xlarge",
    output_path="s3://my-bucket/custom",
    hyperparameters={"epochs": 3},
)
estimator.fit()
