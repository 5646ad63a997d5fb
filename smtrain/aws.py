"""Talking to AWS: the default region (found without boto3), configured boto3 sessions, the region check,
and errors a person can act on.

Every AWS call smtrain makes goes through a session from :func:`boto_session`: botocore's
standard retry mode (throttling and transient errors are retried with backoff), bounded connect
and read timeouts (6 attempts of 20 s at most), a line on stderr when an answer is 5 s late
(SlowAnswerNotice), and nothing else changed. :func:`api_errors` turns whatever botocore raises into
one :class:`~smtrain.errors.UserError` line with exit code 4, with known secrets masked.

boto3 and botocore are imported inside functions: importing this module must stay cheap.
"""

from __future__ import annotations

import configparser
import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from smtrain import exit_codes
from smtrain.errors import AwsError, UserError
from smtrain.jobs import seconds_from_env
from smtrain.redact import mask_text

if TYPE_CHECKING:  # pragma: no cover
    import boto3
    from botocore.config import Config

API_TIMEOUT_ENV = "SMTRAIN_API_TIMEOUT"  # read timeout of every AWS call, in seconds
# SageMaker's and S3's answers come in well under a second; an endpoint that says nothing for this long is
# silent, and the attempts below bound the wait at 6 x 20 s (the notice says so after WAIT_NOTICE_AFTER).
DEFAULT_READ_TIMEOUT = 20.0
WAIT_NOTICE_AFTER = 5.0  # seconds without an answer before a command says it is waiting
CONNECT_TIMEOUT = 10.0
DEFAULT_MAX_ATTEMPTS = 6

# Error codes AWS uses for throttling (botocore's standard retry mode retries the same ones).
THROTTLING_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
    "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled", "SlowDown",
    "PriorRequestNotComplete",
})
_BAD_CREDENTIAL_CODES = frozenset({
    "InvalidClientTokenId", "UnrecognizedClientException", "InvalidAccessKeyId", "SignatureDoesNotMatch",
    "AuthFailure", "InvalidToken", "IncompleteSignature",
})
_EXPIRED_CODES = frozenset({"ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired"})
_ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "403", "Forbidden"})


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


def read_timeout() -> float:
    return seconds_from_env(API_TIMEOUT_ENV, DEFAULT_READ_TIMEOUT)


def client_config(*, max_attempts: int | None = None) -> Config:
    """botocore settings for smtrain's clients.

    Retry mode: AWS_RETRY_MODE when the user set it (standard or adaptive), else standard. Attempts:
    `max_attempts` when given (1 switches botocore's retries off), else AWS_MAX_ATTEMPTS, else 6.
    """
    from botocore.config import Config

    mode = os.environ.get("AWS_RETRY_MODE")
    retries: dict[str, Any] = {"mode": mode if mode in ("standard", "adaptive") else "standard"}
    if max_attempts is not None:
        retries["total_max_attempts"] = max_attempts
    elif not os.environ.get("AWS_MAX_ATTEMPTS"):
        retries["total_max_attempts"] = DEFAULT_MAX_ATTEMPTS
    return Config(retries=retries, connect_timeout=CONNECT_TIMEOUT, read_timeout=read_timeout())


def boto_session(region: str) -> boto3.Session:
    """A boto3 session for `region` whose clients all use :func:`client_config` by default.

    Refuses (UserError, exit 4) a region SageMaker does not exist in: botocore would only fail
    to connect, after its retries.
    """
    import boto3
    import botocore.session

    core = botocore.session.Session()
    # The same session's loader later serves the clients: endpoints.json is parsed once.
    known = {r for partition in core.get_available_partitions()
             for r in core.get_available_regions("sagemaker", partition_name=partition)}
    if region not in known:
        import botocore

        raise AwsError(f"unknown AWS region {region!r}: SageMaker is not in it as far as botocore "
                        f"{botocore.__version__} knows (fix `region` or --region; upgrade boto3 if the "
                        "region is new)", exit_codes.API)
    # A client created with its own config (the create's: retries off) merges over this.
    core.set_default_client_config(client_config())
    notice = SlowAnswerNotice()
    core.register("before-send", notice.sent)
    core.register("response-received", notice.answered)
    core.register("after-call-error", notice.given_up)  # the last attempt failed: no notice after the error
    return boto3.Session(botocore_session=core, region_name=region)


class SlowAnswerNotice:
    """Says once on stderr when an AWS call has had no answer for WAIT_NOTICE_AFTER seconds (retries
    included), and how long smtrain waits at most, so that a silent endpoint is never a silent command."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._said = False

    def sent(self, request: Any = None, event_name: str = "", **_: Any) -> None:
        with self._lock:
            if self._said or self._timer is not None:
                return None  # the first attempt's clock runs on through the retries
            operation = event_name.rsplit(".", 1)[-1] or "an AWS call"
            host = urlsplit(getattr(request, "url", "") or "").netloc or "AWS"
            self._timer = threading.Timer(WAIT_NOTICE_AFTER, self._say, (operation, host))
            self._timer.daemon = True
            self._timer.start()
        return None  # botocore takes a value from a before-send handler as the response

    def answered(self, exception: BaseException | None = None, **_: Any) -> None:
        if exception is None:  # else a timeout or a dropped connection: botocore tries again, the wait goes on
            self.given_up()

    def given_up(self, **_: Any) -> None:
        """An answer came, or the last attempt failed: the clock stops (no notice after the error)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _say(self, operation: str, host: str) -> None:
        with self._lock:
            if self._said or self._timer is None:
                return
            self._said = True
        attempts = int(os.environ.get("AWS_MAX_ATTEMPTS") or DEFAULT_MAX_ATTEMPTS)
        timeout = read_timeout()
        try:
            sys.stderr.write(f"waiting for an answer from {host} ({operation}): none after {WAIT_NOTICE_AFTER:g} s; "
                             f"smtrain gives up after {attempts} attempts of {timeout:g} s ({API_TIMEOUT_ENV}, "
                             "AWS_MAX_ATTEMPTS)\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # stderr closed: nothing to say it on


def error_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError, else None."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code") or "") or None
    return None


_MESSAGE_MAX = 300  # characters of an AWS error message a line carries


def error_message(exc: BaseException) -> str:
    """AWS's message, as one line: a page of HTML (a proxy's or a load balancer's error page, which
    botocore hands over as the message) is no message; a long one is cut."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return ""
    text = str(response.get("Error", {}).get("Message") or "").strip()
    if text.startswith("<") or "<html" in text[:500].lower():
        return ""
    line = " ".join(text.split())
    return line if len(line) <= _MESSAGE_MAX else line[:_MESSAGE_MAX - 3] + "..."


def http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return None


def explain(exc: BaseException, action: str) -> str | None:
    """One line saying what went wrong while trying to `action` and what to do; None if not AWS's."""
    from botocore import exceptions as bx

    if isinstance(exc, (bx.NoCredentialsError, bx.PartialCredentialsError)):
        return (f"cannot {action}: no AWS credentials found. Set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or run `aws configure` / `aws sso login`")
    if isinstance(exc, bx.ProfileNotFound):
        return f"cannot {action}: {exc} (check AWS_PROFILE and ~/.aws/config)"
    if isinstance(exc, (bx.TokenRetrievalError, bx.SSOTokenLoadError, bx.UnauthorizedSSOTokenError)):
        return f"cannot {action}: the AWS SSO session has expired or is missing: run `aws sso login`"
    if isinstance(exc, (bx.CredentialRetrievalError, bx.NoAuthTokenError)):
        return f"cannot {action}: AWS credentials could not be loaded ({type(exc).__name__}); check your profile"
    if isinstance(exc, (bx.EndpointConnectionError, bx.ConnectTimeoutError)):
        return f"cannot {action}: cannot reach AWS ({exc}); check the network and the region"
    if isinstance(exc, bx.ReadTimeoutError):
        return (f"cannot {action}: AWS did not answer in time; try again "
                f"({API_TIMEOUT_ENV} sets the read timeout in seconds)")
    if isinstance(exc, bx.ConnectionClosedError):
        return f"cannot {action}: the connection to AWS was closed; try again"
    if isinstance(exc, (bx.NoRegionError, bx.InvalidRegionError)):
        return f"cannot {action}: {exc} (set `region` in the spec, --region, or AWS_REGION)"
    if not isinstance(exc, bx.ClientError):
        return None
    code = error_code(exc) or "Unknown"
    message = error_message(exc)
    status = http_status(exc)
    # botocore takes the HTTP status for the code when the body is no AWS error (an HTML page): say it is one.
    named = f"HTTP {code}" if code == str(status) else (f"{code}, HTTP {status}" if status else code)
    detail = f"{code}: {message}" if message else named
    if code in THROTTLING_CODES:
        return f"cannot {action}: AWS kept throttling the request after several retries ({detail}); try again later"
    if code == "ResourceLimitExceeded":
        return (f"cannot {action}: an account quota is reached ({detail}). Request an increase in "
                "Service Quotas (Amazon SageMaker), stop other jobs, or pick another instance type")
    if code in _EXPIRED_CODES:
        return f"cannot {action}: the AWS credentials have expired ({code}); refresh them (e.g. `aws sso login`)"
    if code in _BAD_CREDENTIAL_CODES:
        return (f"cannot {action}: AWS rejected the credentials ({detail}); check them, and that the region "
                "is enabled for the account")
    if code in _ACCESS_DENIED_CODES:
        return (f"cannot {action}: access denied ({detail}); the credentials in use need the IAM "
                "permission for it")
    if code == "NoSuchBucket":
        return f"cannot {action}: the S3 bucket does not exist ({detail}); create it or fix `output` in the spec"
    if code in ("ResourceInUse", "ResourceInUseException"):
        return f"cannot {action}: the name is already taken ({detail}); pick another --job-name"
    if code == "ValidationException":
        return f"cannot {action}: SageMaker rejected the request: {message or code}"
    return f"cannot {action}: {detail}"


@contextlib.contextmanager
def api_errors(action: str) -> Iterator[None]:
    """Turn AWS and credential errors raised inside the block into one UserError line (exit 4)."""
    try:
        yield
    except UserError:
        raise
    except Exception as exc:
        message = explain(exc, action)
        if message is None:
            raise
        raise AwsError(mask_text(message), exit_codes.API) from exc


def is_not_found(exc: BaseException) -> bool:
    """SageMaker's answer for a job name it does not know (a ValidationException, not a 404)."""
    if error_code(exc) not in ("ValidationException", "ResourceNotFound", "ResourceNotFoundException"):
        return False
    text = error_message(exc).lower()
    return "not found" in text or "could not find" in text or "does not exist" in text
