"""Stage 2, Spec -> Plan: what will run where, decided and explained before anything is sent.

    catalog.py       the GPU instance catalog (data/instances.yaml), prices by region, overrides, instance choice
    distribution.py  strategy resolution, every refusal and warning, the SDK's `distribution` dict
    entrypoint_rules.py  what the bundled entrypoint needs (TF/Python range, a train channel, a model
                     it knows or a hook that exists, File/FastFile input), hyperparameter typos
    tf_versions.py   the SDK's TensorFlow image table, read as JSON without importing the SDK
    launch.py        per-host launch preview: TF_CONFIG and the mpirun line as the toolkits build them
    build.py         Plan and build_plan(): instance, replicas, batch and learning-rate maths, cost
    request_preview.py  the CreateTrainingJob request a Plan leads to, as the SDK renders it, without the SDK
    service_model.py    botocore's model of CreateTrainingJob (read as a file): every limit checked on a request
    java_regex.py    AWS's Java patterns translated for Python's re (Unicode categories, nested classes, Java's `.` and `$`)
    request_limits.py   a request's limit violations at the spec fields behind them; what is --local only

May import: spec, the shared modules, and three plain-Python modules of the bundled entrypoint
(smtrain_tf.scaling, .contract.hyperparameters, .models.names: one copy of the batch and
learning-rate maths and of the entrypoint's tables), and smtrain_tf's metric_definitions.json as data.
Never a backend, never the SDK, boto3, botocore or TensorFlow (`smtrain plan` must answer in well under
a second): their data files are read as files.
"""
