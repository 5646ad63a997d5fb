"""Stage 2, Spec -> Plan: what will run where, decided and explained before anything is sent.

    catalog.py       the catalog's data model: instance types, prices per region, lookup, CatalogError, availability
    catalog_files.py reads data/instances.yaml and --catalog/--prices files into a Catalog; each bad figure at its line
    instance_choice.py  picks a type (the cheapest that meets the needs, or the spec's); why none matches; its GPU lines
    catalog_listing.py  what `smtrain instances` lists: the catalog filtered (GPU, memory, region), cheapest first
    gpu_facts.py     each GPU model's CUDA compute capability, and whether SageMaker's TensorFlow images drive it
    distribution.py  strategy resolution, every refusal and warning, the `distribution` the TensorFlow contract reads
    entrypoint_rules.py  what the bundled entrypoint needs (TF/Python range, a train channel, a model
                     it knows or a hook that exists, File/FastFile input), hyperparameter typos
    tf_registries.py where SageMaker's TensorFlow training images live (data/tf_registries.yaml, copied from the
                     SDKs' tables and botocore's ECR hosts by tests/tools/tf_registries.py): account and ECR domain
                     per region, repository, Python versions and regions per version; the URI composed from them
    tf_versions.py   the SDK v2 table's versions (short and full), Python versions, regions, and each image's URI
                     as the SDK's image_uris.retrieve renders it (tag, processor from the instance type)
    tf_images.py     smtrain's table of TensorFlow training images (data/tf_images.yaml: Python, CUDA, tag,
                     GA and end-of-patch dates, sources) and their URIs (fully qualified tags)
    tf_image_choice.py  which image a spec gets: version (default: the newest patched), Python, the URI smtrain
                     renders and its source (spec | sdk | smtrain table), the problems, the end-of-patch warning
    keras_choice.py  which Keras the code runs on (tensorflow.keras): the image's own, or Keras 2 through tf_keras
                     on a 2.16+ image, with the tf-keras requirement matched to the image's TensorFlow
    program.py       the program a job runs (bundled, own script, wrapped) and what reaches it: its
                     hyperparameters, smtrain's SMTRAIN_* variables, warnings for training fields it never gets
    launch.py        per-host launch preview: TF_CONFIG and the mpirun line as the toolkits build them
    build.py         Plan and build_plan(): instance, replicas, batch and learning-rate maths (gradient
                     accumulation included), what a wrap does, environment, cost
    choices.py       where a job may run: the one instance, or compute.prefer's fallback list (catalog types),
                     each choice's strategy under the one request, what cannot work for every choice
    instance_groups.py  a heterogeneous cluster's groups from the catalog (a CPU type outside it: unpriced), the
                     group the strategy spans and the plan's instance, the group SageMaker's image is for
    job_cost.py      what a job that ran cost: billable seconds x on-demand price x instances, spot's saving
    job_places.py    where a job's things go: the container paths smtrain uses, TensorBoard's S3 places, and
                     the job name's and the bundle URI's stand-ins of the same length
    git_source.py    code.git: the repository cloned into a cache, the commit resolved once, a checkout per
                     commit that the job is planned and bundled from as its source_dir
    tuning.py        the tuning job over a Plan (TuningPlan): the objective against the job's metric definitions,
                     ranges as AWS takes them, static hyperparameters, what a tuned rate means, the job's name
    tracking.py      what tracking.mlflow adds to a job: MLflow's variables, SMTRAIN_MLFLOW (the run's facts the
                     container cannot know), the pinned MLflow client in its requirements, a trial's parent run
    declared_metrics.py the metrics a model reports beyond loss and accuracy (spec `metrics:`, and literal
                     compile(metrics=...) in the code, read with ast), and the job's MetricDefinitions

May import: spec, the shared modules, and three plain-Python modules of the bundled entrypoint
(smtrain_tf.scaling, .contract.hyperparameters, .models.names: one copy of the batch and
learning-rate maths and of the entrypoint's tables), and smtrain_tf's metric_definitions.json as data.
Never a stage above it, never the SDK, boto3, botocore or TensorFlow (`smtrain plan` must answer in well under
a second).
"""
