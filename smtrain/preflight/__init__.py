"""Stage 3, Plan + the code -> findings: an own script's code checked before it is bundled (ast only, nothing run).

    scan.py         the scan: which files, the job's context, the findings (errors and warnings) at file:line (a
                    notebook entry point: its made script scanned, each finding at the notebook's cell and line)
    rules.py        its rules on APIs TensorFlow removed, strategies (and those a wrap cannot stand for), Horovod
                    and TF_CONFIG against the job, Keras 3's fit, CUDA_VISIBLE_DEVICES, argparse against the
                    hyperparameters (an error where argparse exits for certain)
    io_rules.py     its rules on local paths, literal /opt/ml paths, saves to args.model_dir (an s3:// URI) and on
                    the model saved by every worker
    channel_rules.py  its rule on channels the script reads (SM_CHANNEL_X) that the spec's inputs do not give
    keras_rules.py  its rules on what Keras 3 refuses at run time: optimizers given lr=, model.save() without a
                    .keras/.h5 path, Keras 2 calls it removed (reset_states, legacy optimizers, fit_generator)
    names.py        what a name in a script stands for, through its imports

May import: plan, spec and the shared modules. Never TensorFlow: the code is read, not run.
"""
