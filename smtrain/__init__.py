"""smtrain: a YAML job spec in, a TensorFlow training job on SageMaker (or on this machine) out.

The flow runs one way:  YAML -> Spec -> Plan -> bundle -> the rendered request -> backend.

    spec/       YAML file -> validated Spec (positions, ${VAR}, --set, units, problems)
    plan/       Spec -> Plan (instance catalog, distribution rules, TF images, launch preview)
    preflight/  Plan + an own script -> findings: the code checked before it is bundled (ast only)
    bundle/     Plan -> Request (the content-addressed sourcedir.tar.gz, the job name)
    render/     Plan + Request -> the CreateTrainingJob / CreateHyperParameterTuningJob request, smtrain's own
                rendering, within botocore's limits
    sagemaker/  the rendered request -> SageMaker through boto3 (the dry run shows it, submit sends it); following jobs
    local/      the rendered request -> a job run here, each host a process under the container contract
    cli/        click commands and how results are shown; following a job
    examples/   the example specs and their code, shipped as data (a link to the repository's configs/,
                where each is tested); `smtrain init --example NAME` writes one out

Imports run the same way down, never up: cli -> (sagemaker | local) -> render -> bundle -> preflight ->
plan -> spec -> the shared modules at this level (tests/test_layout.py checks it). The two backends are
siblings: both take the rendered request, neither imports the other.

Shared by every stage, and importing nothing above them:
    errors.py      UserError: a message for a person and its exit code
    exit_codes.py  the process exit codes CI relies on
    jobs.py        what a backend reports about a job (JobInfo, LogEvent, Backend, metric series by epoch),
                   polling knobs
    redact.py      secret masking for everything printed or written for people: mask_data, mask_text
    secret_values.py  the known secret values, found in text in one pass (redact's index)
    terminal_text.py  a job's output line as a terminal shows it, with nothing a terminal would act on
    aws.py         talking to AWS: the default region (read without boto3), boto3 sessions with retries and
                   timeouts, AWS errors as one actionable line (both backends use it)
"""
