"""Backend, Request -> SageMaker: the SDK v2 path, dry run and real, and following jobs.

    estimator.py  the SDK's TensorFlow estimator, built once for dry run and submit; sessions that
                  intercept the finished CreateTrainingJob request (lazy SDK import)
    submit.py     estimator arguments from a Request; dry_run() and submit()
    upload.py     the bundle to S3: HEAD, then PUT with its sha256 (skipped when S3 has it)
    create.py     CreateTrainingJob never sent twice (describe before resending a lost answer)
    aws.py        boto3 sessions, retries and timeouts; AWS errors as one actionable line
    quotas.py     Service Quotas before spending: each instance choice's quota, and what running jobs hold
    backend.py    describe / list / logs / stop of SageMaker jobs, their TensorBoard event files (SageMakerBackend)
    event_files.py  where SageMaker keeps a job's TensorBoard event files; those files alone downloaded to a
                  directory here that is smtrain's, never over a file smtrain did not write
    tuning.py     the SDK's HyperparameterTuner over the same estimator: dry run (the intercepted
                  CreateHyperParameterTuningJob) and tune()
    tuning_jobs.py  describe (trials, the best one) / list / stop / logs of tuning jobs; the lifecycle
                  commands' backend that takes a tuning job's name too
    metric_series.py  a job's metric series from CloudWatch, one point per epoch (the rule local jobs share)

May import: bundle, plan, spec and the shared modules. sagemaker, boto3 and botocore are imported
inside functions only.
"""
