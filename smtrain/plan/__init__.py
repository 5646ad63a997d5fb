"""Stage 2, Spec -> Plan: what will run where, decided and explained before anything is sent.

    catalog.py       the GPU instance catalog (data/instances.yaml), prices and regions, unknown facts, types left
                     out, overrides, instance choice, what a type offers in a region (availability)
    catalog_listing.py  what `smtrain instances` lists: the catalog filtered (GPU, memory, region), cheapest first
    gpu_facts.py     each GPU model's CUDA compute capability, and whether SageMaker's TensorFlow images drive it
    distribution.py  strategy resolution, every refusal and warning, the SDK's `distribution` dict
    entrypoint_rules.py  what the bundled entrypoint needs (TF/Python range, a train channel, a model
                     it knows or a hook that exists, File/FastFile input), hyperparameter typos
    tf_versions.py   the SDK's TensorFlow image table, read as JSON without importing the SDK
    tf_images.py     smtrain's table of TensorFlow training images (data/tf_images.yaml: Python, CUDA, tag,
                     GA and end-of-patch dates, sources) and the image URIs it renders for the SDK's registries
    tf_image_choice.py  which image a spec gets: version (default: the newest patched), Python, URI and its
                     source (spec | sdk | smtrain table), the problems and the end-of-patch warning
    program.py       the program a job runs (bundled, own script, wrapped) and what reaches it: its
                     hyperparameters, smtrain's SMTRAIN_* variables, warnings for training fields it never gets
    launch.py        per-host launch preview: TF_CONFIG and the mpirun line as the toolkits build them
    build.py         Plan and build_plan(): instance, replicas, batch and learning-rate maths (gradient
                     accumulation included), what a wrap does, environment, cost
    choices.py       where a job may run: the one instance, or compute.prefer's fallback list (catalog types),
                     each choice's strategy under the one request, what cannot work for every choice
    job_cost.py      what a job that ran cost: billable seconds x on-demand price x instances, spot's saving
    request_preview.py  the CreateTrainingJob request a Plan leads to, as the SDK renders it, without the SDK
    service_model.py    botocore's model of CreateTrainingJob (read as a file): every limit checked on a request
    java_regex.py    AWS's Java patterns translated for Python's re (Unicode categories, nested classes, Java's `.` and `$`)
    request_limits.py   a request's limit violations at the spec fields behind them; what is --local only
    preflight.py     the scan of an own script's code (ast only): which files, the job's context, findings
    preflight_rules.py  its rules on APIs TensorFlow removed, strategies (and those a wrap cannot stand for),
                     Horovod and TF_CONFIG against the job, Keras 3's fit, CUDA_VISIBLE_DEVICES, argparse
                     against the hyperparameters (an error where argparse exits for certain)
    preflight_io.py  its rules on local paths, literal /opt/ml paths, saves to args.model_dir (an s3:// URI)
                     and on the model saved by every worker
    preflight_keras.py  its rules on what Keras 3 refuses at run time: optimizers given lr=, model.save()
                     without a .keras/.h5 path
    preflight_names.py  what a name in a script stands for, through its imports
    git_source.py    code.git: the repository cloned into a cache, the commit resolved once, a checkout per
                     commit that the job is planned and bundled from as its source_dir
    tuning.py        the tuning job over a Plan (TuningPlan): the objective against the job's metric definitions,
                     ranges as AWS takes them, static hyperparameters, what a tuned rate means, the job's name
    declared_metrics.py the metrics a model reports beyond loss and accuracy (spec `metrics:`, and literal
                     compile(metrics=...) in the code, read with ast), for the MetricDefinitions

May import: spec, the shared modules, and three plain-Python modules of the bundled entrypoint
(smtrain_tf.scaling, .contract.hyperparameters, .models.names: one copy of the batch and
learning-rate maths and of the entrypoint's tables), and smtrain_tf's metric_definitions.json as data.
Never a backend, never the SDK, boto3, botocore or TensorFlow (`smtrain plan` must answer in well under
a second): their data files are read as files.
"""
