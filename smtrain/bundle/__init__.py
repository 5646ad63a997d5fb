"""Stage 4, Plan -> Request: the deterministic, content-addressed sourcedir.tar.gz, and the job's name.

    build.py           plan_bundle(): entrypoint + source dir + requirements -> PlannedBundle, every
                       refusal and warning, nothing packed; build_bundle(): that, packed -> Bundle
    walk.py            the walk over a tree: archive order, links checked, secret-looking names and
                       special files noted
    ignore.py          .smtrainignore and .gitignore rules (gitignore syntax, pathspec); the line
                       that leaves out one file
    own_places.py      smtrain's own places (SMTRAIN_HOME, directories marked as written by a run): never
                       bundled
    secret_guard.py    which file paths look like secrets
    secret_content.py  which file heads hold a secret (private keys, AWS key pairs, Google credentials)
    sizes.py           large files warned about, hopeless totals refused early, the size error
    archive.py         the deterministic tar.gz bytes
    model.py           Bundle, PlannedBundle, BundleFile, PlannedFile, BundleError
    entrypoint.py      where the bundled TensorFlow entrypoint (smtrain_entry, smtrain_wrap, smtrain_tf) is
                       installed
    job_requirements.py  lines smtrain adds to the bundle's requirements.txt (tf-keras for tensorflow.keras: 2)
    request.py         Request (plan, job name, bundle, where it goes), make_request(), check_bundle()
    script_reading.py  a bundled script read for `smtrain check` (ast only): the packages it reaches through
                       the bundle's own modules (smtrain_tf), the calls it makes (model.fit)

May import: preflight, plan, spec and the shared modules. Never render or a backend.
"""
