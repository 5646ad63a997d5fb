"""The container contract: SM_* variables, hyperparameters, TF_CONFIG, and the failure file and errors.

Pure Python (no TensorFlow), so a broken contract fails in well under a second.
"""
