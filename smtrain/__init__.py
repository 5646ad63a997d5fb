"""smtrain: TensorFlow training jobs on Amazon SageMaker GPUs from a YAML spec."""
