"""The command line: click commands, how results are shown, and following a job.

    commands.py  the click group and every command; parse, call a stage, print, exit code
    render.py    text for people, JSON/YAML with stable keys for pipelines
    follow.py    waiting and log streaming; what Ctrl-C leaves behind
    backends.py  which backend knows a job (a local run of that name, else SageMaker)
    closed_output.py  a closed stdout (`| head`) ends any command quietly, exit 141
    tensorboard_program.py  where TensorBoard is installed (an optional extra), and running it on a logdir

May import every stage. Commands import their stage lazily, so `smtrain --help`, `validate`,
`plan`, `instances` and `schema` never load the SDK, boto3 or TensorFlow.
"""
