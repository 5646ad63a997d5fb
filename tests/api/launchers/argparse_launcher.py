"""Launch MNIST training on SageMaker (run: python argparse_launcher.py --instance-count 4)."""
import argparse

from sagemaker.tensorflow import TensorFlow


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--instance-type", default="ml.g5.12xlarge")
    parser.add_argument("--instance-count", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--role", default="arn:aws:iam::123456789012:role/SageMakerRole")
    return parser.parse_args()


def main():
    args = parse_args()
    estimator = TensorFlow(
        entry_point="train.py",
        source_dir="code",
        role=args.role,
        instance_type=args.instance_type,
        instance_count=args.instance_count,
        framework_version="2.14",
        py_version="py310",
        distribution={"multi_worker_mirrored_strategy": {"enabled": True}},
        hyperparameters={"epochs": 5, "learning-rate": 0.001, "optimizer": "adam"},
        output_path="s3://my-bucket/mnist/output",
    )
    estimator.fit("s3://my-bucket/mnist/train", wait=False)


if __name__ == "__main__":
    main()
