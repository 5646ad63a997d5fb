"""Backend, Request -> a job run here: the same bundle, the same container contract, hosts as processes.

    request.py    the local Request and its CreateTrainingJob request rendered offline (via sagemaker)
    channels.py   input channels from directories, file:// or s3:// URIs
    places.py     SMTRAIN_HOME and a local output checked and made before the job exists (exit 2 if not)
    job_env.py    code.requirements installed into the job's own virtual environment
    contract.py   one host's /opt/ml layout, config files and SM_* environment, as the toolkit sets them
    hosts.py      every host's directory laid out, the bundle unpacked into each
    launch.py     the processes per host: TF_CONFIG on free ports, ps processes, one mpirun for MPI
    supervise.py  the process group: output streamed with host prefixes, one failure ends all
    tf_noise.py   TensorFlow's C++ start-up lines recognised (also behind mpirun's tags): log file only
    lifeline.py   the keeper each process starts under: its group dies with smtrain, even on SIGKILL
    artifacts.py  model.tar.gz and output.tar.gz, as SageMaker uploads them
    records.py    job records under SMTRAIN_HOME: status, list, logs of local jobs
    metric_series.py  a local job's metric series: its MetricDefinitions applied to a host's log
    backend.py    LocalBackend: run(), describe / list / logs / stop, event_files (TensorBoard's, in place)
    demo_data.py  scikit-learn's digits written as train/validation channels (make demo)
    tuning.py     `tune --local`: a tuning's trials run one after another as local jobs, the best by its objective
    trial_sampling.py  each trial's values: a seeded random search, or every combination of a grid

May import: sagemaker (to render hyperparameters exactly as a real job), bundle, plan, spec and
the shared modules. TensorFlow only ever runs in the host processes, never in smtrain's own.
"""
