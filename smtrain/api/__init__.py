"""The library: what `import smtrain` offers, and what the CLI calls (the click layer only parses and shows).

    arguments.py    the API's arguments checked as the CLI's options are (since, limit, timeout, flags)
    specs.py        load(): a spec from a YAML file or a mapping, with overrides (SpecError by file:line or field)
    planning.py     plan() -> Planned: every decision, the request's limits, the code checked; catalog_of()
    validation.py   validate() -> Validation: every problem of a spec file in one run, stage by stage
    code_checks.py  the code's checks before packing (bundle, preflight), refusals of findings and local places
    submitting.py   dry_run(), submit() -> Job: SageMaker, or here (local=True); the quota check before an upload
    importing.py    import_launcher(), import_job(): an SDK v2 launcher or a training job written as a spec file
    tuning.py       tune(), tune_dry_run(), tune_here(): a tuning job on SageMaker, or trials here
    checking.py     check() -> CheckResult: the first steps on one device and in the planned layout, compared here
    job.py          Job: status, wait, logs, metrics, event files, cost, stop, model_uri; Job.attach(name)
    listing.py      list_jobs(): jobs newest first (SageMaker's, tuning jobs or local runs), priced on request
    backends.py     which backend knows a job (a local run of that name, else SageMaker), the backends by region
    waiting.py      the poll loop of every wait (WaitTimeout when it runs out)
    metrics.py      metrics per epoch: the rows the CLI's table shares, Metrics (pandas-ready, plot())
    live.py         in Jupyter: a job's status and epoch lines drawn in place while it runs
    display.py      the HTML tables of the reprs (Planned, Job, Metrics), masked

May import every stage below the CLI (both backends: a Job is either kind); never smtrain.cli.
Nothing here prints or exits: results are returned, failures raised as smtrain.errors' exceptions, each with
the exit code the CLI maps it to. Stages are imported inside the functions that need them, so `import smtrain`
loads neither boto3 nor TensorFlow.
"""
