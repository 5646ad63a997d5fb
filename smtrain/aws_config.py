"""The default AWS region as boto3 would find it, without importing boto3 (it is slow to load)."""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from pathlib import Path


def default_region(env: Mapping[str, str] | None = None) -> str | None:
    """AWS_REGION, AWS_DEFAULT_REGION, then the profile's `region` in the AWS config file."""
    env = os.environ if env is None else env
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if env.get(name):
            return env[name]
    config_file = Path(env.get("AWS_CONFIG_FILE") or Path.home() / ".aws" / "config").expanduser()
    profile = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    parser = configparser.RawConfigParser()
    try:
        parser.read(config_file)
    except (OSError, configparser.Error):
        return None
    section = profile if profile == "default" else f"profile {profile}"
    if parser.has_option(section, "region"):
        return parser.get(section, "region").strip() or None
    return None
