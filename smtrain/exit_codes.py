"""Process exit codes, the contract CI pipelines rely on (README.md lists them)."""

OK = 0  # success; for job commands: the job Completed
FAILED = 1  # the job Failed
USAGE = 2  # invalid spec, bad arguments
STOPPED = 3  # the job was Stopped
API = 4  # AWS API, credential, network or upload error: nothing was half-made
QUOTA = 5  # the job would not fit the account's Service Quotas (smtrain's check): nothing was uploaded
INTERNAL = 70  # a bug in smtrain (EX_SOFTWARE); --debug shows the traceback
TIMEOUT = 124  # `wait --timeout` ran out (as timeout(1) does)
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
TERMINATED = 143  # SIGTERM (128 + 15): handled as Ctrl-C is (a CI runner cancelling the step)
OUTPUT_CLOSED = 141  # the reader of stdout went away (`| head`): 128 + SIGPIPE, as a shell reports it
