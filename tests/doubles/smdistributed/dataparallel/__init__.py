"""TEST DOUBLE of ``smdistributed.dataparallel`` -- NOT Amazon's SageMaker data parallel library.

Provides only the TensorFlow client, ``smdistributed.dataparallel.tensorflow``, implemented on top
of Horovod so that smtrain's tests can exercise the SMDDP code path of a training script under
``mpirun`` on a CPU-only machine. See ``tests/doubles/README.md``.
"""

__test_double__ = True
__version__ = "0.0.0+testdouble"
