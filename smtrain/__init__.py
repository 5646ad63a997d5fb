"""smtrain: a YAML job spec in, a TensorFlow training job on SageMaker (or on this machine) out.

The flow runs one way:  YAML -> Spec -> Plan -> Request -> backend.

    spec/       YAML file -> validated Spec (positions, ${VAR}, --set, units, problems)
    plan/       Spec -> Plan (instance catalog, distribution rules, TF versions, launch preview)
    bundle/     Plan -> Request (the content-addressed sourcedir.tar.gz, the job name)
    sagemaker/  Request -> a SageMaker training job, through the SDK (dry run or real); following it
    local/      Request -> a job run here, each host a process under the container contract
    cli/        click commands and how results are shown; following a job
    examples/   the example specs and their code, shipped as data (a link to the repository's configs/,
                where each is tested); `smtrain init --example NAME` writes one out

Imports run the same way down, never up: cli -> local -> sagemaker -> bundle -> plan -> spec ->
the shared modules at this level (tests/test_layout.py checks it). local sits above sagemaker
because a local run renders its hyperparameters through the SDK path, exactly as a real job.

Shared by every stage, and importing nothing above them:
    errors.py      UserError: a message for a person and its exit code
    exit_codes.py  the process exit codes CI relies on
    jobs.py        what a backend reports about a job (JobInfo, LogEvent, Backend), polling knobs
    redact.py      secret masking for everything printed or written for people: mask_data, mask_text
    secret_values.py  the known secret values, found in text in one pass (redact's index)
    terminal_text.py  a job's output line as a terminal shows it, with nothing a terminal would act on
    aws_config.py  the default AWS region, read without boto3
"""
