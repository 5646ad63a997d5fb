"""The command line: click commands over the library (smtrain.api), and how results are shown.

    commands.py  the `smtrain` group: its global options, `completion`, and every command group's module added
    spec_commands.py  `validate`, `plan`, `schema`: the spec checked, every decision shown, its JSON Schema
    submit_command.py  `smtrain submit SPEC`: to SageMaker or here (--local); `--check` runs check_command's first
    job_commands.py  following jobs: `status`, `list`, `logs`, `wait`, `stop`
    tensorboard_command.py  `smtrain tensorboard JOB`: a job's event files, and TensorBoard on them
    instances_command.py  `smtrain instances`: the GPU catalog with prices, filtered
    init_command.py  `smtrain init`: a starting spec for a script of yours, or an example's
    steps.py     what commands share: spec + every --set, catalog, the library's checks shown, follow a job
    options.py   the arguments and options several commands take (SPEC, --set, --strict, --timeout, --region, -o)
    guard.py     known failures as a message and an exit code, the same for every command (--debug: traceback);
                 GuardedGroup, the top command: a usage error's document when the line asks for -o json/yaml
    render.py    text for people, JSON/YAML with stable keys for pipelines
    costs.py     what jobs cost in `status` and `list --cost`, as text (the pricing is the library's)
    quota_check.py  the Service Quotas check of `submit` and `plan --check`: its lines, exit 5 when nothing fits
    capacity_lines.py  plan's and the dry run's lines for compute.prefer's choices, capacity, retries, keys
    follow.py    what Ctrl-C leaves behind while a command stays with a job
    closed_output.py  a closed stdout (`| head`) ends any command quietly, exit 141
    tensorboard_program.py  where TensorBoard is installed (an optional extra), and running it on a logdir
    debug_command.py  `smtrain debug JOB [--host]`: the SSM command that opens a shell on a running host
    shown_paths.py  a path as the user would type it in the next command
    import_command.py  `smtrain import LAUNCHER` / `--job NAME`: an SDK v2 launcher or a training job as a spec
    tune_command.py  `smtrain tune SPEC`: a SageMaker tuning job (--dry-run, --wait), or trials here (--local)
    tuning_render.py  tuning for people: plan's tuning lines, the dry run, the created job, a tuning job's status
    metrics_command.py  `smtrain metrics JOB` (--follow, --plot, --system)
    metrics_table.py  a job's metrics per epoch as a text table, JSON, CSV, and the summary that ends
                     `submit --wait` / `--local`
    metrics_plot.py  `metrics --plot`: loss and accuracy charts in the terminal (plotext, imported only there)
    job_scaling.py  `metrics`' scaling line: a job's examples/s against an earlier one-replica job of its spec
    system_usage.py  `metrics --system`: each host's CPU, memory, GPU and disk use (table, CSV, chart), and the
                     utilization line `status` and `wait` end with
    tune_local.py  `tune --local`: a line per trial, the table of trials with the best marked, exit code
    check_command.py  `smtrain check SPEC`: the first steps on one device and in the planned layout compared (exit
                 0 equivalent, 1 not, 2 bad input); its options, which `submit --check` shares
    check_render.py  check's text: the result's rows (CheckResult.rows, which Jupyter's table shows too) in a column
    examples.py  `init --example NAME`: an example spec the package carries (smtrain/examples/), written out

May import every stage: the library for every step a command takes (the layout test keeps smtrain.cli
imported by nothing else), the stages below for what it shows. Commands import lazily, so `smtrain --help`,
`validate`, `plan`, `instances` and `schema` never load the SDK, boto3 or TensorFlow.
"""
