"""The suite's shared fixtures, registered once for every test module (no module rebinds one as its own).

- tests/support/moto_server.py: `moto_session` (one patched moto server per test session, that is per
  pytest-xdist worker) and `aws` (that server emptied for the test, with its bucket); between modules the
  server is reset, so no fault or record of one module reaches the next.
- tests/support/demo_digits.py: `digits` (the digits demo's channels, written once per module).
- tests/support/mlflow_server.py: `mlflow_server` (a real `mlflow server` on 127.0.0.1, one per session).
- tests/support/check_temp.py: `own_temp` (a `smtrain check`'s work directories under the test's own), which
  a module asks for with `pytestmark = pytest.mark.usefixtures("own_temp")` or by name.
"""

pytest_plugins = [
    "tests.support.moto_server",
    "tests.support.demo_digits",
    "tests.support.mlflow_server",
    "tests.support.check_temp",
]
