"""smtrain's TensorFlow training program, run inside SageMaker's TensorFlow training container.

It must not import `smtrain`: only this directory is shipped in the job's source bundle.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
