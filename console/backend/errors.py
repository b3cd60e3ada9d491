"""The one place botocore's exceptions become console errors (one clear line each).

`translate(error, operation, where)` returns the ConsoleError to raise, or None when the caller
should let the original exception through. Throttling is not translated here: the client retries it.
"""

from __future__ import annotations

import os
import socket

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConfigParseError,
    ConnectionClosedError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    HTTPClientError,
    InvalidConfigError,
    InvalidRegionError,
    MetadataRetrievalError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
    SSLError,
    SSOError,
    TokenRetrievalError,
)
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from console.errors import (
    AccessDenied,
    BackendError,
    BadInput,
    ConsoleError,
    EndpointUnreachable,
    LimitExceeded,
    NoCredentials,
    ResourceInUse,
    StreamNotFound,
    Throttled,
)

# Error codes that mean "slow down"; the client retries these with backoff before giving up.
THROTTLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "LimitExceededException",
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "KMSThrottlingException",
    }
)

_CREDENTIAL_REJECTED_CODES = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "ExpiredToken",
        "SignatureDoesNotMatch",
    }
)

_ACCESS_DENIED_CODES = frozenset({"AccessDeniedException", "AccessDenied", "KMSAccessDeniedException"})

_NO_CREDENTIALS_HINT = (
    "no AWS credentials found: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, pass --profile NAME, "
    "or use --local / --endpoint-url"
)


# How a request failed to get an answer (connection_failure): never connected, so nothing was sent;
# or sent (perhaps in part) and then the connection dropped or the answer did not come in time.
NOT_CONNECTED = "could not connect"
DROPPED = "connection dropped"
TIMED_OUT = "no answer in time"


def connection_failure(error: BaseException) -> str | None:
    """NOT_CONNECTED, DROPPED or TIMED_OUT for a botocore transport failure; None for anything else.
    aiobotocore raises EndpointConnectionError both for a refused connect and for a reset in the
    middle of an exchange: only the first (aiohttp's ClientConnectorError, a DNS failure) is safe."""
    if isinstance(error, SSLError):  # a plain-HTTP server behind an https:// URL: no retry fixes that
        return None
    if isinstance(error, ConnectTimeoutError):
        return NOT_CONNECTED
    if isinstance(error, EndpointConnectionError):
        # aiohttp is loaded by then (it raised the cause); importing it here keeps it off the start-up
        # of commands that never make a call (--help, the console's argument checks).
        import aiohttp

        cause = (getattr(error, "kwargs", {}) or {}).get("error")
        return NOT_CONNECTED if isinstance(cause, (aiohttp.ClientConnectorError, socket.gaierror)) else DROPPED
    if isinstance(error, ReadTimeoutError):
        return TIMED_OUT
    if isinstance(error, (ConnectionClosedError, BotocoreConnectionError)):
        return DROPPED
    if isinstance(error, HTTPClientError) and isinstance((getattr(error, "kwargs", {}) or {}).get("error"), OSError):
        return DROPPED
    return None


def error_code(error: BaseException) -> str | None:
    if isinstance(error, ClientError):
        code: str | None = error.response.get("Error", {}).get("Code")
        return code
    return None


MAX_MESSAGE_CHARS = 300  # a server's message beyond this is noise on a one-line error


def error_message(error: ClientError) -> str:
    message = error.response.get("Error", {}).get("Message") or ""
    message = " ".join(message.split())  # servers sometimes send multi-line messages
    return message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS] + "..."


SERVICE_NAMES = {
    "dynamodb": "DynamoDB",
    "cloudwatch": "CloudWatch",
    "sts": "STS",
    "lambda": "Lambda",
    "firehose": "Firehose",
    "pipes": "EventBridge Pipes",
    "kinesisanalyticsv2": "Managed Service for Apache Flink",
}


def translate(
    error: BaseException, *, operation: str, where: str, endpoint_url: str | None, service: str = "kinesis"
) -> ConsoleError | None:
    """Map one botocore exception to a ConsoleError. `where` is the backend label for messages."""
    if isinstance(error, (NoCredentialsError, PartialCredentialsError)):
        return NoCredentials(_NO_CREDENTIALS_HINT)
    if isinstance(error, (SSOError, TokenRetrievalError)):
        return NoCredentials(f"cannot get AWS credentials: {_reason(error)} (an SSO profile? run: aws sso login)")
    if isinstance(error, (CredentialRetrievalError, MetadataRetrievalError)):  # a failing credential_process, ...
        return NoCredentials(f"cannot get AWS credentials: {_reason(error)}")
    if isinstance(error, (ConfigParseError, InvalidConfigError)):
        return BadInput(f"the AWS configuration is broken: {_reason(error)}", code="bad_aws_config")
    if isinstance(error, ProfileNotFound):
        # botocore names None when the profile came from AWS_PROFILE; name the one it looked for.
        profile = error.kwargs.get("profile") or os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")
        return BadInput(f"AWS profile not found: {profile!r} (see ~/.aws/config)", code="bad_profile")
    if isinstance(error, InvalidRegionError):
        return BadInput(f"not a valid AWS region: {error.kwargs.get('region_name')!r}", code="bad_region")
    if isinstance(error, NoRegionError):
        return BadInput("no AWS region configured: pass --region or set AWS_REGION", code="bad_region")
    failure = connection_failure(error)
    if failure == NOT_CONNECTED:
        what = "connection timed out" if isinstance(error, ConnectTimeoutError) else "connection failed"
        return EndpointUnreachable(f"cannot reach {_url(error, endpoint_url)}: {what}", request_sent=False)
    if isinstance(error, ReadTimeoutError):
        return EndpointUnreachable(f"no answer from {_url(error, endpoint_url)} in time ({operation})")
    if failure == DROPPED:
        return EndpointUnreachable(f"{_url(error, endpoint_url)} closed the connection ({operation})")
    if isinstance(error, SSLError):
        return EndpointUnreachable(
            f"TLS handshake with {_url(error, endpoint_url)} failed ({_reason(error)}); "
            "if the server speaks plain HTTP, use an http:// URL"
        )
    if isinstance(error, (BotocoreConnectionError, HTTPClientError)):  # proxies, resets, other socket failures
        return EndpointUnreachable(f"cannot reach {_url(error, endpoint_url)}: {_reason(error)}")
    if not isinstance(error, ClientError):
        if isinstance(error, BotoCoreError):  # anything else botocore raises is still one line, not a traceback
            return BackendError(f"{operation} failed on {where}: {_reason(error)}")
        return None
    code = error_code(error) or "Unknown"
    message = error_message(error)
    if code.isdigit():
        # No Kinesis error code, only an HTTP status: a proxy or gateway failing, or not a Kinesis API at all.
        if code in ("500", "502", "503", "504"):  # retried by the client before we get here
            return BackendError(
                f"{operation} failed on {where}: HTTP {code} with no Kinesis error (a server "
                "or gateway failure; try again)",
                code="server_error",
            )
        if service != "kinesis":  # a Kinesis server without this service (kinesis-mock has no DynamoDB)
            return BackendError(
                f"this endpoint does not serve {SERVICE_NAMES.get(service, service)}: {where} answered "
                f"{operation} with HTTP {code}",
                code="not_kinesis",
            )
        return BackendError(
            f"{where} answered {operation} with HTTP {code} and no Kinesis error; is it a Kinesis endpoint?",
            code="not_kinesis",
        )
    if code in _CREDENTIAL_REJECTED_CODES:
        return NoCredentials(f"{where} rejected the credentials ({code}): {message}")
    if code in _ACCESS_DENIED_CODES:
        return AccessDenied(f"access denied for {service}:{operation} on {where}: {message}")
    if code == "ResourceInUseException":
        return ResourceInUse(f"{message} (the stream is busy, e.g. UPDATING after a reshard; try again shortly)")
    if code in THROTTLE_CODES:
        cls = Throttled if code != "LimitExceededException" else LimitExceeded
        return cls(f"throttled by {where} on {operation} and still throttled after retries: {message}")
    if code == "ResourceNotFoundException":
        return StreamNotFound(message or f"not found on {where}")
    if code in ("InvalidArgumentException", "ValidationException", "SerializationException"):
        return BadInput(f"{where} refused {operation}: {message}", code="invalid_argument")
    if code == "ConditionalCheckFailedException":  # a DynamoDB write whose condition no longer holds
        return BackendError(
            f"{operation} on {where}: the item changed since it was read ({message})", code="condition_failed"
        )
    if code == "ExpiredIteratorException":
        return BackendError(f"shard iterator expired: {message}", code="expired_iterator")
    return BackendError(f"{operation} failed on {where}: {code}: {message}")


def _reason(error: BaseException) -> str:
    reason = str((getattr(error, "kwargs", {}) or {}).get("error") or error)
    reason = " ".join(reason.split()).rstrip(": ") or type(error).__name__
    return reason if len(reason) <= 200 else reason[:200] + "..."


def _url(error: BaseException, fallback: str | None) -> str:
    kwargs = getattr(error, "kwargs", {}) or {}
    return str(kwargs.get("endpoint_url") or fallback or "the Kinesis endpoint")
