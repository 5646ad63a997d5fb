"""Input channels for local runs: each host's input/data/<channel>/ filled from a local path or S3.

Local directories (a path relative to the spec file, an absolute path or a file:// URI) are
linked, not copied. s3:// prefixes are downloaded once per job, the way the SageMaker SDK's local
mode reads a prefix (an object named exactly by the URI is a single file; otherwise every object
under the prefix, at its path below the prefix), then linked into every host. ShardedByS3Key
gives host i of N every N-th file, in key order, as SageMaker gives each host its share.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from smtrain import exit_codes
from smtrain.errors import AwsError, UserError
from smtrain.spec.local_uri import local_path


@dataclass(frozen=True)
class ChannelSource:
    name: str
    uri: str
    sharded: bool = False


@dataclass(frozen=True)
class Materialized:
    """A channel's data on this machine: a directory, or one file."""

    name: str
    path: Path
    sharded: bool

    def files(self) -> list[Path]:
        if self.path.is_file():
            return [self.path]
        return sorted((p for p in self.path.rglob("*") if p.is_file()), key=lambda p: p.relative_to(self.path).as_posix())


def _s3_parts(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    return parsed.netloc, parsed.path.lstrip("/")


def download_s3(uri: str, target: Path, region: str | None) -> Path:
    """Download an S3 object or prefix into `target`; returns the file or directory holding it.

    Uses boto3's default credentials and endpoint settings (AWS_ENDPOINT_URL included).
    """
    import boto3
    import botocore.exceptions

    bucket, prefix = _s3_parts(uri)
    s3 = boto3.session.Session(region_name=region).client("s3")
    target.mkdir(parents=True, exist_ok=True)
    try:
        if prefix and not prefix.endswith("/"):
            try:
                s3.head_object(Bucket=bucket, Key=prefix)
            except botocore.exceptions.ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
                    raise
            else:
                destination = target / os.path.basename(prefix)
                s3.download_file(bucket, prefix, str(destination))
                return destination
        count = 0
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                key = obj["Key"]
                if key.endswith("/"):
                    continue  # a "folder" marker
                relative = key[len(prefix):].lstrip("/")
                destination = (target / relative).resolve()
                if not destination.is_relative_to(target.resolve()):
                    raise UserError(f"s3://{bucket}/{key} would land outside the channel directory", exit_codes.USAGE)
                destination.parent.mkdir(parents=True, exist_ok=True)
                s3.download_file(bucket, key, str(destination))
                count += 1
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        raise AwsError(f"could not download {uri}: {exc}", exit_codes.API) from exc
    if count == 0:
        raise UserError(f"{uri}: no objects under this prefix", exit_codes.USAGE)
    return target


def check_s3_sources(sources: Sequence[ChannelSource], region: str | None) -> None:
    """Before a job exists: the S3 channels can be listed with this machine's credentials (else UserError,
    exit 4, as `submit` says it). One call per channel; an empty prefix is left to the job, whose download
    fails with a ClientError as on SageMaker."""
    uris = [s.uri for s in sources if s.uri.startswith("s3://")]
    if not uris:
        return
    import boto3

    from smtrain.aws import api_errors

    for uri in uris:
        with api_errors(f"read the input {uri}"):
            session = boto3.session.Session(region_name=region)
            if session.get_credentials() is None:  # what the first call would raise, without waiting for it
                import botocore.exceptions

                raise botocore.exceptions.NoCredentialsError()
            bucket, prefix = _s3_parts(uri)
            session.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)


def materialize(source: ChannelSource, base_dir: Path, cache_dir: Path, region: str | None) -> Materialized:
    """Make `source` available on this machine (download S3 data into `cache_dir`)."""
    if source.uri.startswith("s3://"):
        return Materialized(source.name, download_s3(source.uri, cache_dir / source.name, region), source.sharded)
    path = local_path(source.uri, base_dir)
    if not path.exists():
        raise UserError(f"input channel '{source.name}': {source.uri} does not exist ({path})", exit_codes.USAGE)
    return Materialized(source.name, path, source.sharded)


def link_into(channel: Materialized, channel_dir: Path, host_index: int, host_count: int) -> None:
    """Fill one host's input/data/<channel>: a link to the directory, or links to this host's files."""
    if channel_dir.is_symlink() or channel_dir.is_file():
        channel_dir.unlink()
    if channel.path.is_dir() and not channel.sharded:
        channel_dir.parent.mkdir(parents=True, exist_ok=True)
        channel_dir.symlink_to(channel.path, target_is_directory=True)
        return
    channel_dir.mkdir(parents=True, exist_ok=True)
    files = channel.files()
    if channel.sharded:
        files = files[host_index::host_count]
    root = channel.path if channel.path.is_dir() else channel.path.parent
    for file in files:
        link = channel_dir / file.relative_to(root)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(file)


def prepare_channels(sources: Sequence[ChannelSource], channel_dirs: Sequence[dict[str, Path]], base_dir: Path,
                     cache_dir: Path, region: str | None) -> None:
    """Materialize every channel once, then link it into each host (`channel_dirs[i][name]`)."""
    for source in sources:
        channel = materialize(source, base_dir, cache_dir, region)
        for i, dirs in enumerate(channel_dirs):
            link_into(channel, dirs[source.name], i, len(channel_dirs))
