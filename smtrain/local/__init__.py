"""Backend, the rendered request -> a job run here: the same bundle, the same container contract, hosts as processes.

    request.py    the local Request, and its CreateTrainingJob request as the renderer gives it, with places here
    channels.py   input channels from directories, file:// or s3:// URIs (S3 access checked before the job)
    places.py     SMTRAIN_HOME and a local output checked and made before the job exists (exit 2 if not)
    job_env.py    code.requirements installed into the job's own virtual environment; smtrain's tf-keras line matched to
                  this machine's TensorFlow
    tf_install.py the hosts' TensorFlow found without importing it: required, and set against tensorflow.version
    contract.py   one host's /opt/ml layout, config files and SM_* environment, as the toolkit sets them
    hosts.py      every host's directory laid out, the bundle unpacked into each
    launch.py     the processes per host, as the toolkit's: TF_CONFIG on reserved ports, ps servers, one mpirun for MPI
    ports.py      ports of 127.0.0.1 reserved for a run (below the ephemeral range, each locked): never taken twice
    replica_layout.py  the replicas per host: the plan's, CPU devices standing in for GPUs (--replicas-per-host: fewer);
                  hooks/sitecustomize.py splits the CPU for a hand-written script right after TensorFlow loads
    supervise.py  the process group: output streamed with host prefixes, one failure ends all
    usage_sampler.py  each host's process tree sampled with `ps` while it runs (CPU, memory), for `metrics --system`
    tf_noise.py   TensorFlow's C++ start-up lines recognised (behind mpirun's tags, or glued to a progress bar's
                  end): log file only
    lifeline.py   the keeper each process starts under: its group dies with smtrain, even on SIGKILL
    artifacts.py  model.tar.gz and output.tar.gz, as SageMaker uploads them
    stray_writes.py  what a job wrote outside its hosts' directories (this machine's /opt/ml, --model_dir)
    mpi_failure.py   a failed Horovod/smddp job's reason: the failed rank's own error, not mpirun's trailer
    records.py    job records under SMTRAIN_HOME: status, list, logs of local jobs
    metric_series.py  a local job's metric series: its MetricDefinitions applied to a host's log
    backend.py    LocalBackend: run(), describe / list / logs / stop, event_files (TensorBoard's, in place)
    demo_data.py  scikit-learn's digits written as train/validation channels (make demo)
    check_records.py  what a check run wrote (smtrain_tf.check): each worker's steps joined, in replica order
    check_verdict.py  two check runs compared: equivalent, or the first step they part and its likely cause
    tuning.py     `tune --local`: a tuning's trials run one after another as local jobs, the best by its objective
    trial_sampling.py  each trial's values: a seeded random search, or every combination of a grid

May import: render (the request a dry run shows, laid out here), bundle, preflight, plan, spec and the shared
modules (smtrain.aws for s3:// channels). Never smtrain.sagemaker, never the SageMaker SDK. TensorFlow only
ever runs in the host processes, never in smtrain's own.
"""
