import os

import sagemaker
from sagemaker.tensorflow import TensorFlow

sess = sagemaker.Session()
nodes = int(os.environ.get("NODES", "1"))
estimator = TensorFlow(
    entry_point="train.py",
    source_dir="code",
    role=sagemaker.get_execution_role(),
    instance_count=nodes,
    instance_type=os.environ.get("INSTANCE_TYPE", "ml.g5.xlarge"),
    framework_version="2.16",
    py_version="py310",
    hyperparameters={"epochs": 2, "run-id": os.environ.get("RUN_ID", "a")},
    output_path="s3://my-bucket/computed",
    model_uri=f"s3://{sess.default_bucket()}/models/previous.tar.gz",
)
estimator.fit({"train": "s3://my-bucket/data/train"})
