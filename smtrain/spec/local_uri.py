"""A spec's data place (inputs, output) as this machine knows it: file:// URIs and local paths made paths.

An s3:// URI names no place here; the rest (a path relative to the spec file, an absolute path, ~,
or a file:// URI) do, for `submit --local` and for a bundle that must leave a local output out.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from smtrain import exit_codes
from smtrain.errors import UserError


def local_path(uri: str, base_dir: Path) -> Path:
    """The directory or file a non-S3 URI names: file:// URIs, absolute paths, paths relative to `base_dir`."""
    if uri.startswith("file://"):
        parsed = urlparse(uri)
        if parsed.netloc not in ("", "localhost"):
            raise UserError(f"{uri}: a file:// URI must name a path on this machine (file:///path)", exit_codes.USAGE)
        return Path(unquote(parsed.path))
    path = Path(os.path.expanduser(uri))
    return path if path.is_absolute() else (base_dir / path).resolve()
