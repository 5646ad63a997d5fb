"""A heterogeneous cluster: CPU hosts run a tf.data service that feeds the GPU hosts, which train under Horovod."""
import sagemaker
from sagemaker.inputs import TrainingInput
from sagemaker.instance_group import InstanceGroup
from sagemaker.tensorflow import TensorFlow

data_group = InstanceGroup("data_group", "ml.c5.18xlarge", 2)
dnn_group = InstanceGroup(instance_group_name="dnn_group", instance_type="ml.g5.12xlarge", instance_count=2)

estimator = TensorFlow(
    entry_point="train.py",
    source_dir="code",
    role=sagemaker.get_execution_role(),
    instance_groups=[data_group, dnn_group],
    framework_version="2.12",
    py_version="py310",
    distribution={"mpi": {"enabled": True, "processes_per_host": 4}, "instance_groups": [dnn_group]},
    hyperparameters={"tf_data_mode": "service", "batch_size": 1024},
    output_path="s3://my-bucket/hetero",
    max_run=7200,
)
estimator.fit({
    "training": TrainingInput("s3://my-bucket/imagenet/train", instance_groups=["data_group"]),
    "validation": "s3://my-bucket/imagenet/val",
})
