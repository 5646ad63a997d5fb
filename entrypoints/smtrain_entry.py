"""SageMaker runs this as `python smtrain_entry.py --name value ...` from the code directory."""

import os
import sys

# The package sits next to this file; user model hooks (module:function) live here too.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from smtrain_tf._main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
