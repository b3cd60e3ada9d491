"""The one place botocore's exceptions become console errors (one clear line each).

`translate(error, operation, where)` returns the ConsoleError to raise, or None when the caller
should let the original exception through. Throttling is not translated here: the client retries it.
"""

from __future__ import annotations

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    InvalidRegionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
)

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
THROTTLE_CODES = frozenset({
    "ProvisionedThroughputExceededException",
    "LimitExceededException",
    "ThrottlingException",
    "Throttling",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "KMSThrottlingException",
})

_CREDENTIAL_REJECTED_CODES = frozenset({
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "InvalidSignatureException",
    "ExpiredTokenException",
    "ExpiredToken",
    "SignatureDoesNotMatch",
})

_ACCESS_DENIED_CODES = frozenset({"AccessDeniedException", "AccessDenied", "KMSAccessDeniedException"})

_NO_CREDENTIALS_HINT = (
    "no AWS credentials found: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, pass --profile NAME, "
    "or use --local / --endpoint-url"
)


def error_code(error: BaseException) -> str | None:
    if isinstance(error, ClientError):
        return error.response.get("Error", {}).get("Code")
    return None


def error_message(error: ClientError) -> str:
    message = error.response.get("Error", {}).get("Message") or ""
    return " ".join(message.split())  # servers sometimes send multi-line messages


def is_throttle(error: BaseException) -> bool:
    return error_code(error) in THROTTLE_CODES


def translate(error: BaseException, *, operation: str, where: str, endpoint_url: str | None) -> ConsoleError | None:
    """Map one botocore exception to a ConsoleError. `where` is the backend label for messages."""
    if isinstance(error, (NoCredentialsError, PartialCredentialsError)):
        return NoCredentials(_NO_CREDENTIALS_HINT)
    if isinstance(error, ProfileNotFound):
        return BadInput(f"AWS profile not found: {error.kwargs.get('profile')!r} (see ~/.aws/config)", code="bad_profile")
    if isinstance(error, InvalidRegionError):
        return BadInput(f"not a valid AWS region: {error.kwargs.get('region_name')!r}", code="bad_region")
    if isinstance(error, NoRegionError):
        return BadInput("no AWS region configured: pass --region or set AWS_REGION", code="bad_region")
    if isinstance(error, ConnectTimeoutError):
        return EndpointUnreachable(f"cannot reach {_url(error, endpoint_url)}: connection timed out")
    if isinstance(error, EndpointConnectionError):
        return EndpointUnreachable(f"cannot reach {_url(error, endpoint_url)}: connection failed")
    if isinstance(error, ReadTimeoutError):
        return EndpointUnreachable(f"no answer from {_url(error, endpoint_url)} in time ({operation})")
    if isinstance(error, ConnectionClosedError):
        return EndpointUnreachable(f"{_url(error, endpoint_url)} closed the connection ({operation})")
    if not isinstance(error, ClientError):
        return None
    code = error_code(error) or "Unknown"
    message = error_message(error)
    if code in _CREDENTIAL_REJECTED_CODES:
        return NoCredentials(f"{where} rejected the credentials ({code}): {message}")
    if code in _ACCESS_DENIED_CODES:
        return AccessDenied(f"access denied for kinesis:{operation} on {where}: {message}")
    if code == "ResourceInUseException":
        return ResourceInUse(f"{message} (the stream is busy, e.g. UPDATING after a reshard; try again shortly)")
    if code in THROTTLE_CODES:
        cls = Throttled if code != "LimitExceededException" else LimitExceeded
        return cls(f"throttled by {where} on {operation} and still throttled after retries: {message}")
    if code == "ResourceNotFoundException":
        return StreamNotFound(message or f"not found on {where}")
    if code in ("InvalidArgumentException", "ValidationException", "SerializationException"):
        return BadInput(f"{where} refused {operation}: {message}", code="invalid_argument")
    if code == "ExpiredIteratorException":
        return BackendError(f"shard iterator expired: {message}", code="expired_iterator")
    return BackendError(f"{operation} failed on {where}: {code}: {message}")


def _url(error: BaseException, fallback: str | None) -> str:
    kwargs = getattr(error, "kwargs", {}) or {}
    return str(kwargs.get("endpoint_url") or fallback or "the Kinesis endpoint")
