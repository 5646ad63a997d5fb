"""Stage 2, Spec -> Plan: what will run where, decided and explained before anything is sent.

    catalog.py       the GPU instance catalog (data/instances.yaml), price overrides, instance choice
    distribution.py  strategy resolution, every refusal and warning, the SDK's `distribution` dict
    tf_versions.py   the SDK's TensorFlow image table, read as JSON without importing the SDK
    launch.py        per-host launch preview: TF_CONFIG and the mpirun line as the toolkits build them
    build.py         Plan and build_plan(): instance, replicas, batch and learning-rate maths, cost

May import: spec, the shared modules, and smtrain_tf.scaling (the entrypoint's batch and learning-rate
maths, plain Python: one copy for the plan and the training program). Never a backend, never the SDK, boto3 or TensorFlow
(`smtrain plan` must answer in well under a second).
"""
