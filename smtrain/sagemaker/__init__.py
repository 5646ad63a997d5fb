"""Backend, the rendered request -> SageMaker through boto3: the dry run shows the request, submit sends that
value unchanged; following jobs.

    submit.py     prepare() (bundle, name, the rendered CreateTrainingJob request within its limits), dry_run(),
                  send() and submit() = send(prepare())
    tuning.py     the same for CreateHyperParameterTuningJob: prepare(), dry_run(), send() and tune()
    upload.py     the bundle to S3: HEAD, then PUT with its sha256 (skipped when S3 has it)
    create.py     CreateTrainingJob (and the tuning create) never sent twice (describe before resending a lost
                  answer)
    quotas.py     Service Quotas before spending: each instance choice's quota, and what running jobs hold
    backend.py    describe / list / logs / stop of SageMaker jobs, their TensorBoard event files (SageMakerBackend)
    event_files.py  where SageMaker keeps a job's TensorBoard event files; those files alone downloaded to a
                  directory here that is smtrain's, never over a file smtrain did not write
    tuning_jobs.py  describe (trials, the best one) / list / stop / logs of tuning jobs; the lifecycle
                  commands' backend that takes a tuning job's name too
    remote_debug.py  the `aws ssm start-session` command of a running host of a job with remote debug on
    job_import.py  a training job (DescribeTrainingJob, its tags, its code archive unpacked here) as the SDK v2
                  estimator arguments that make it again (`smtrain import --job`)
    metric_series.py  a job's metric series from CloudWatch, one point per epoch (smtrain.jobs.by_epoch)
    system_metrics.py  a job's instance metrics per host from CloudWatch (CPU, memory, GPU, disk) and what the
                     GPU figure says (one GPU of several busy, idle)

May import: render, bundle, preflight, plan, spec and the shared modules (smtrain.aws for sessions and errors).
Never smtrain.local, never the SageMaker SDK; boto3 and botocore are imported inside functions only.
"""
