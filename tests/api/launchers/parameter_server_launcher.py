import sagemaker
from sagemaker.tensorflow import TensorFlow

sess = sagemaker.Session()
estimator = TensorFlow(
    entry_point="train.py",
    source_dir="code",
    role=sagemaker.get_execution_role(),
    instance_count=3,
    instance_type="ml.g5.2xlarge",
    framework_version="2.13",
    py_version="py310",
    distribution={"parameter_server": {"enabled": True}},
    sagemaker_session=sess,
)
estimator.fit(f"s3://{sess.default_bucket()}/data/train")
