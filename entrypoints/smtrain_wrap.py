"""SageMaker runs this as `python smtrain_wrap.py <the job's hyperparameters>` for a wrapped script (code.wrap).

It runs the user's own script (SMTRAIN_WRAP_SCRIPT) unchanged inside the job's tf.distribute strategy;
smtrain_tf/wrap/ does the work.
"""

import os
import sys

# smtrain_tf sits next to this file in the bundle, beside the user's script.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from smtrain_tf.wrap.launcher import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(_HERE))
