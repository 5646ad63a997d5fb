"""Stage 5, Plan + bundle -> the request: CreateTrainingJob and CreateHyperParameterTuningJob as smtrain sends
them, rendered by smtrain's own code (no SageMaker SDK) and checked against botocore's service model. Both
backends take the rendered request: SageMaker's sends it unchanged, the local one lays it out under the
container contract.

    training_request.py  the CreateTrainingJob request of a Plan and its bundle (also the preview with templates,
                     and a local run's with its places on this machine)
    tuning_request.py    the CreateHyperParameterTuningJob request of a TuningPlan, from the training request
    service_model.py     botocore's model of the two operations (read as a file): every limit checked on a request
    java_regex.py        AWS's Java patterns translated for Python's re (Unicode categories, nested classes, Java's
                     `.` and `$`)
    request_limits.py    a training request's limit violations at the spec fields behind them; what is --local only
    tuning_limits.py     a tuning request's limits at the spec fields behind them; the tuning plan's own part checked
                     before any request (checked_tuning_plan)
    checked_plan.py      build_plan and its request's limits: the plan every command starts from

May import: bundle, preflight, plan, spec and the shared modules. Never a backend, never the SDK; botocore's data
files are read as files (`validate` and `plan` import no boto3).
"""
