"""TEST DOUBLE of the ``smdistributed`` namespace -- NOT Amazon's SageMaker library.

The real ``smdistributed`` packages exist only inside SageMaker's deep learning containers.
This stand-in lets smtrain's tests run a training script that imports
``smdistributed.dataparallel.tensorflow`` on an ordinary machine; see ``tests/doubles/README.md``.
Only ``smdistributed.dataparallel.tensorflow`` is provided.
"""

__test_double__ = True
