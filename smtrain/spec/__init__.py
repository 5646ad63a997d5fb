"""Stage 1, YAML -> Spec: the job spec file read, typed and checked, or every problem at its file:line:column.

    spec_file.py    the file read safely: a regular file, at most 1MB, UTF-8
    yaml_source.py  YAML node graph -> plain data plus a SourceMap of positions; ${VAR} expansion; the
                    caps on depth, values and text; only the standard tags
    model.py        the pydantic models of the spec, --set overrides, load_spec(), cross-field rules
    capacity.py     compute.prefer's rules that need no catalog (not with spot, instance_type, nodes or a
                    job-level training plan; each type once)
    instance_groups.py  compute.instance_groups' rules (a heterogeneous cluster: your own script, unwrapped;
                    horovod/smddp on one named group) and the group names channels and distribution give
    fields.py       the value types of the fields (whole numbers, finite numbers, flags, sizes, durations,
                    checked text) and the JSON Schema part each one brings
    patterns.py     the text patterns (names, ARNs, regions, URIs, image references), matched whole
    schema.py       the JSON Schema for editors (`smtrain schema`): the loader's rules and ${VAR} forms
    problems.py     Problem / SpecError: what is wrong, where (file:line:column and dotted field)
    units.py        sizes (GB, GiB), durations (90m, 6h, 1d), --since values
    local_uri.py    the place on this machine a data URI names (file://, a path), for --local and the bundle
    python_file.py  a user's Python file read with ast within bounds (size, depth), parsed once; why not
    notebook.py     a notebook entry point (train.ipynb) as the script a job runs (nbformat, read lazily): code cells
                    in order, magics and ! lines rewritten line for line, every problem at its cell and line
    script_args.py  the options a script's argparse declares and how it parses, read with ast
    script_reads.py what a script imports and reads that decides its job (Horovod, TF_CONFIG), read with ast
    launcher.py     an SDK v2 launcher (.py or .ipynb) read with ast, never run: its TensorFlow(...)/Estimator(...)
                    call's values (or what each is when the launcher computes it), its fit()'s inputs
    sdk_arguments.py  SDK v2 estimator arguments (a launcher's or a described job's) -> spec data, and each
                    argument not carried over with where and why (`smtrain import`)
    imported_spec.py  an imported spec's YAML text, its notes as comments
    tracking.py     `tracking:`'s rules: an MLflow ARN (MlflowConfig) or tracking URI (its variables), what goes with
                    each, what a tuning job cannot carry
    starter.py      `smtrain init`: a commented starting spec for an existing script or notebook
    tuning.py       the `tuning:` section (TuningSpec): objective, strategy, limits, ranges checked against
                    the tuned field's own rules; trial_overrides() for one trial's spec

May import: the shared modules (smtrain.errors, exit_codes, aws for the default region; redact, to register the spec's
secrets as soon as it is read). Nothing else of smtrain; nbformat only inside notebook.py's reader.
"""
