"""Errors a user can meet. Every one is shown as a single line, never a traceback.

`code` is the stable machine-readable name used in `--json` error documents;
`exit_code` is what the CLI exits with (2 = bad usage or input, 1 = the operation failed or was refused,
130 = cut short by Ctrl-C, as a shell reports SIGINT).
"""

from __future__ import annotations


class ConsoleError(Exception):
    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self)


class BadInput(ConsoleError):
    """The user gave us something we cannot use (a malformed key, a bad number, a missing file)."""

    code = "bad_input"
    exit_code = 2


class TilingError(BadInput):
    """A set of open shards that does not cover [0, 2**128-1] exactly once."""

    code = "bad_tiling"


class ReadOnlyRefusal(ConsoleError):
    """A mutating action was asked for while --read-only (or the config's read_only) is on."""

    code = "read_only"
    exit_code = 1


class Interrupted(ConsoleError):
    """Ctrl-C where the command waits for the operator (a confirmation prompt): nothing was called."""

    code = "interrupted"
    exit_code = 130


class PlanRejected(ConsoleError):
    """A reshard plan breaches a limit or no longer matches the stream."""

    code = "plan_rejected"
    exit_code = 1


class BackendError(ConsoleError):
    """Something went wrong talking to Kinesis. Subclasses name the common cases."""

    code = "backend_error"
    exit_code = 1


class NoCredentials(BackendError):
    code = "no_credentials"


class AccessDenied(BackendError):
    code = "access_denied"


class StreamNotFound(BackendError):
    code = "stream_not_found"


class EndpointUnreachable(BackendError):
    """The endpoint did not answer. `request_sent` is False only when no connection was made (refused,
    no route, a name that does not resolve, a connect timeout): nothing reached the server, so trying
    again cannot write anything twice. Otherwise the request may have been written and its answer lost."""

    code = "endpoint_unreachable"

    def __init__(self, message: str, *, code: str | None = None, request_sent: bool = True) -> None:
        super().__init__(message, code=code)
        self.request_sent = request_sent


class Throttled(BackendError):
    code = "throttled"


class ResourceInUse(BackendError):
    code = "resource_in_use"


class LimitExceeded(BackendError):
    code = "limit_exceeded"
