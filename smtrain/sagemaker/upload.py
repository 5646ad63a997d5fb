"""Content-addressed upload of the source bundle to S3.

The key carries the bundle's sha256 (``<output>/source/<sha256>/sourcedir.tar.gz``), so an object
already at that key with the same size and recorded hash is this very bundle and is not sent
again. New uploads record the hash as object metadata and have S3 verify it (ChecksumSHA256).
"""

from __future__ import annotations

import base64
import io
import os
import sys
from dataclasses import dataclass
from typing import Any

from smtrain.bundle.model import Bundle

SHA256_METADATA = "sha256"  # x-amz-meta-sha256


@dataclass(frozen=True)
class UploadResult:
    uri: str
    sha256: str
    bytes: int
    uploaded: bool  # False: the same bundle was already there

    def to_dict(self) -> dict[str, Any]:
        return {"uri": self.uri, "sha256": self.sha256, "bytes": self.bytes, "uploaded": self.uploaded}


def split_s3_uri(uri: str) -> tuple[str, str]:
    """("bucket", "key/part") of ``s3://bucket/key/part``."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri!r}")
    bucket, _, key = uri[len("s3://"):].partition("/")
    if not bucket or not key:
        raise ValueError(f"an s3:// URI needs a bucket and a key: {uri!r}")
    return bucket, key


def want_progress_bar(output: str) -> bool:
    """A bar for a person at a terminal; none in CI, in pipes, or with --output json/yaml."""
    ci = os.environ.get("CI", "").strip().lower()
    return output == "text" and sys.stderr.isatty() and ci in ("", "0", "false", "no")


def _already_there(s3: Any, bucket: str, key: str, bundle: Bundle) -> bool:
    from botocore.exceptions import ClientError

    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        # 403: the role may write without reading (HEAD needs s3:GetObject); uploading the same
        # bytes again is harmless, and the PUT reports a real permission problem.
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound", "403", "AccessDenied"):
            return False
        raise
    recorded = head.get("Metadata", {}).get(SHA256_METADATA)
    # The key already names the hash; the size and the recorded hash guard against a truncated
    # or foreign object that happens to sit there.
    return head.get("ContentLength") == bundle.size and recorded in (None, bundle.sha256)


def upload_bundle(s3: Any, bundle: Bundle, uri: str, *, progress: bool = False) -> UploadResult:
    """Put `bundle` at `uri` unless it is already there. `s3` is a boto3 S3 client."""
    from boto3.s3.transfer import TransferConfig

    bucket, key = split_s3_uri(uri)
    if _already_there(s3, bucket, key, bundle):
        return UploadResult(uri, bundle.sha256, bundle.size, uploaded=False)
    extra = {
        "Metadata": {SHA256_METADATA: bundle.sha256},
        "ChecksumSHA256": base64.b64encode(bytes.fromhex(bundle.sha256)).decode("ascii"),
        "ContentType": "application/gzip",
    }
    # One PUT whatever the size (bundles are capped well below S3's 5 GB limit for it): a whole
    # object SHA-256 checksum is not available for multipart uploads.
    config = TransferConfig(multipart_threshold=max(bundle.size + 1, 8 * 2**20), use_threads=False)
    if not progress:
        s3.upload_fileobj(io.BytesIO(bundle.data), bucket, key, ExtraArgs=extra, Config=config)
    else:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        with Progress(TextColumn("uploading {task.description}"), BarColumn(), DownloadColumn(),
                      TransferSpeedColumn(), console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task(uri.rsplit("/", 2)[-2][:12], total=bundle.size)
            s3.upload_fileobj(io.BytesIO(bundle.data), bucket, key, ExtraArgs=extra, Config=config,
                              Callback=lambda sent: bar.advance(task, sent))
    return UploadResult(uri, bundle.sha256, bundle.size, uploaded=True)
