"""Keras's warning that HDF5 is a legacy format, logged at every save, is shown once.

Keras 3 logs "You are saving your model as an HDF5 file ... considered legacy" through absl's
logger at every `.h5` save, so a ModelCheckpoint writing `.h5` each epoch repeats it once per epoch
and per worker; the first says all there is to say. Only that warning's repeats are dropped: any
other line on the `absl` logger passes, repeated or not.
"""

from __future__ import annotations

import logging

_LEGACY_HDF5 = "You are saving your model as an HDF5 file"


class _HDF5Once(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self._shown = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith(_LEGACY_HDF5):
            return True
        shown, self._shown = self._shown, True
        return not shown


def show_once() -> None:
    logger = logging.getLogger("absl")
    if not any(isinstance(f, _HDF5Once) for f in logger.filters):
        logger.addFilter(_HDF5Once())
