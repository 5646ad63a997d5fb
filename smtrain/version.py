"""The installed distribution's version, as `smtrain --version`, `smtrain.__version__` and the job's
environment (SMTRAIN_VERSION) give it: a module of its own so that a stage reads it without importing the
package's face, which points at the api above every stage."""

from __future__ import annotations


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("smtrain")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
