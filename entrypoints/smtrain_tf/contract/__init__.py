"""The container contract: SM_* variables, hyperparameters, TF_CONFIG, and the failure file and errors.

Pure Python (no TensorFlow), so a broken contract fails in well under a second.

    container.py        SM_* variables, channels, model/output/checkpoint directories; read() for the
                        bundled entrypoint or for a script of the user's own
    hyperparameters.py  the hyperparameter table: arguments, SM_HPS, SMTRAIN_<NAME>, defaults
    cluster.py          what TF_CONFIG says about this process
    errors.py           known failures and their exit status
    failure.py          the failure file (SageMaker's FailureReason)
    known_failures.py   TensorFlow errors with a known cause, as one-line failures
    log.py              the program's output lines, each in one write
    mlflow_run.py       the job's one MLflow run (tracking.mlflow), logged by the chief
    user_hooks.py       `module:function` hooks in the user's source directory, found and called
"""
