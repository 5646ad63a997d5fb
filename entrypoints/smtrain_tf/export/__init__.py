"""Export: the model artifacts and the training summary, written by the chief.

    artifacts.py  a SavedModel at <model_dir>/1 (for TF Serving) and <model_dir>/model.keras, the bundled
                  entrypoint's and smtrain_tf.save's; the training summary
"""
