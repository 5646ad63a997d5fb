"""Stage 3, Plan -> Request: the deterministic, content-addressed sourcedir.tar.gz, and the job's name.

    build.py         build_bundle(): entrypoint + source dir + requirements -> Bundle, every refusal
    walk.py          the walk over a tree: archive order, links checked, secret-looking files noted
    ignore.py        .smtrainignore and .gitignore rules (gitignore syntax, pathspec)
    secret_guard.py  which file names look like secrets
    archive.py       the deterministic tar.gz bytes
    model.py         Bundle, BundleFile, PlannedFile, BundleError
    entrypoint.py    where the bundled TensorFlow entrypoint (entrypoints/) is, its metric definitions
    request.py       Request (plan, job name, bundle, where it goes) and make_request()

May import: plan, spec and the shared modules. Never a backend.
"""
