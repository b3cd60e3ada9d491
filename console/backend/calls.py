"""The one path every AWS call takes: retries, then a one-line console error.

Throttling and server hiccups are retried here with exponential backoff and jitter and reported
through `on_retry` and the logger. So are failed connections, where that is safe: a read is asked
again after a dropped connection or a timeout; anything else only when the connection was never
made. A call that writes (a put, a split, a retention change...) whose answer was lost, or that
failed as a whole with a server error, is never resent here: it may have been applied. The producer
counts such puts as possible duplicates; a change to a stream is settled by reading it back
(console.reshard.actionlog). botocore itself makes one attempt (clients.py) and aiohttp resends
only idempotent HTTP methods, never the POSTs of these APIs, so nothing below resends blindly.

Waits are bounded: a read that timed out is asked again at most once (never at first contact: a
silent endpoint gives its one line after one read timeout, 20 s by default), far fewer tries than
throttling gets; the error line names both timeouts. What is not retried comes out translated
(errors.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ConnectTimeoutError

from console.backend.config import MAX_REQUEST_TIMEOUT, BackendConfig
from console.backend.errors import (
    NOT_CONNECTED,
    THROTTLE_CODES,
    TIMED_OUT,
    connection_failure,
    error_code,
    error_message,
    translate,
)
from console.errors import BackendError, ConsoleError, EndpointUnreachable

log = logging.getLogger("kconsole.backend")  # the command users know: a shown record names kconsole

# Server-side hiccups worth another try, like throttling (but not reported as throttling).
_TRANSIENT_CODES = frozenset(
    {
        "InternalFailure",
        "InternalFailureException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalServerError",
        "500",
        "502",
        "503",
        "504",
    }
)  # bare HTTP statuses: a gateway failing, no error body
_PUT_OPERATIONS = frozenset({"PutRecord", "PutRecords"})
# Calls that change nothing: asked again after a dropped connection or a timeout, they cannot do harm.
# Anything else is retried on a failed connection only when nothing was sent (connection refused).
_IDEMPOTENT_READS = frozenset(
    {
        "ListStreams",
        "ListShards",
        "DescribeStream",
        "DescribeStreamSummary",
        "DescribeLimits",
        "DescribeStreamConsumer",
        "ListStreamConsumers",
        "GetShardIterator",
        "GetRecords",
        "GetMetricData",
        "GetMetricStatistics",
        "GetCallerIdentity",
        "GetItem",
        "BatchGetItem",
        "Query",
        "Scan",
        "DescribeTable",
    }
)
# AWS names its reads so: an operation added later (ListTagsForResource, DescribeAccountSettings)
# is a read by its name; anything else is taken to write.
_READ_PREFIXES = ("List", "Describe", "Get", "BatchGet", "Query", "Scan")
# A read that timed out is asked again this many times at most (throttling gets AWS_MAX_ATTEMPTS):
# an endpoint that accepts and never answers costs read timeout x 2, not x 7.
TIMED_OUT_RETRIES = 1


def is_read(operation: str) -> bool:
    return operation in _IDEMPOTENT_READS or operation.startswith(_READ_PREFIXES)


@dataclass(frozen=True)
class RetryEvent:
    """One retried call: the UI and CLI show these ("throttled on PutRecords, retrying in 0.4 s")."""

    operation: str
    code: str  # the error code, or how the connection failed (console.backend.errors.connection_failure)
    attempt: int
    delay: float
    connection: bool = False  # the connection failed (refused, dropped, timed out), not the server

    @property
    def throttled(self) -> bool:
        return self.code in THROTTLE_CODES

    def describe(self) -> str:
        what = "throttled" if self.throttled else self.code if self.connection else f"transient {self.code}"
        return f"{what} on {self.operation}; retry {self.attempt} in {self.delay:.1f} s"


class CallPath:
    """Calls on one backend's clients, retried and translated; its counters and retry reports are
    shared by every service the backend talks to."""

    # An endpoint never reached since the backend opened is more likely a wrong URL than a restarting
    # server: refused connections there get only a couple of quick retries, so a typo fails fast.
    max_retries_never_reached = 2
    backoff_base = 0.2  # seconds; doubles per retry up to backoff_cap, with jitter
    backoff_cap = 5.0

    def __init__(self, config: BackendConfig, *, endpoint_url: str | None) -> None:
        self.config = config
        # Throttling and server hiccups are retried here, not in botocore, so each retry can be shown;
        # AWS_MAX_ATTEMPTS counts the first call, as botocore's does.
        self.max_retries = config.max_attempts - 1
        self.endpoint_url = endpoint_url
        # Called on every retry. The default says so on stderr (CLI); the UI replaces it with a status line.
        self.on_retry: Callable[[RetryEvent], None] | None = StderrRetryLines()
        self.retries = 0  # total retried calls, for status lines
        self._reached = False  # any call answered yet
        # An embedded server still starting (open_backend(..., wait_for_server=False)): every call
        # waits for it, and fails with its start's error if it never answers.
        self.server_ready: asyncio.Future[Any] | None = None

    @property
    def request_timeout(self) -> float:
        """Seconds a request may go unanswered before it fails (and, for a put, its outcome is unknown)."""
        # 0 (--cli-read-timeout 0) waits without limit; verification then waits out the longest timeout.
        return self.config.read_timeout or MAX_REQUEST_TIMEOUT

    @property
    def label(self) -> str:
        if self.config.kind == "local" and self.endpoint_url:
            return "local " + self.endpoint_url.split("://", 1)[-1]
        return self.config.label

    async def call(self, client: Any, operation: str, *, service: str = "kinesis", **params: Any) -> dict[str, Any]:
        """`operation` (AWS's name, "ListShards") on `client`, the response without ResponseMetadata."""
        if self.server_ready is not None:
            await asyncio.shield(self.server_ready)  # one caller cancelled leaves the start to the others
        method = getattr(client, snake_case(operation))
        attempt = 0
        while True:
            try:
                response: dict[str, Any] = await method(**params)
                self._reached = True
                response.pop("ResponseMetadata", None)
                return response
            except ConsoleError:
                raise
            except Exception as error:  # every botocore failure is translated below
                code = error_code(error)
                failure = connection_failure(error)
                if failure is not None:
                    retry = is_read(operation) or (failure == NOT_CONNECTED and operation not in _PUT_OPERATIONS)
                else:
                    retry = retryable(error, code, operation)
                quick = failure == NOT_CONNECTED and not self._reached
                if failure == TIMED_OUT:  # bounded: a silent endpoint is said in read timeout x (1 or 2)
                    most = TIMED_OUT_RETRIES if self._reached else 0
                else:
                    most = self.max_retries_never_reached if quick else self.max_retries
                if retry and attempt < most:
                    attempt += 1
                    delay = min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
                    event = RetryEvent(
                        operation, failure or code or "unknown", attempt, delay, connection=bool(failure)
                    )
                    if quick:  # a wrong URL says so once, in its error line, not in retry lines first
                        self.retries += 1
                    else:
                        self._report_retry(event)
                    await asyncio.sleep(delay)
                    continue
                translated = translate(
                    error, operation=operation, where=self.label, endpoint_url=self.endpoint_url, service=service
                )
                if isinstance(translated, EndpointUnreachable) and failure in (TIMED_OUT, NOT_CONNECTED):
                    translated = self._with_timeouts(translated, error, operation, attempt + 1)
                elif isinstance(translated, BackendError) and code in _TRANSIENT_CODES and not is_read(operation):
                    translated.code = "server_error"  # it may have been applied: the caller settles it
                raise (error if translated is None else translated) from None

    def _with_timeouts(
        self, translated: EndpointUnreachable, error: Exception, operation: str, attempts: int
    ) -> EndpointUnreachable:
        """A timeout's error line names both timeouts, the one that ran out, and the attempts made."""
        url = (getattr(error, "kwargs", {}) or {}).get("endpoint_url") or self.endpoint_url or "the endpoint"
        timeouts = (
            f"connect timeout {_seconds(self.config.connect_timeout)}, "
            f"read timeout {_seconds(self.config.read_timeout)}"
        )
        tries = f", {attempts} attempts" if attempts > 1 else ""
        if isinstance(error, ConnectTimeoutError):
            message = f"cannot reach {url}: connection timed out, the connect timeout ran out ({operation}; {timeouts}{tries})"
        elif connection_failure(error) == TIMED_OUT:
            message = f"no answer from {url} in time: the read timeout ran out ({operation}; {timeouts}{tries})"
        else:
            return translated
        return EndpointUnreachable(message, code=translated.code, request_sent=translated.request_sent)

    def _report_retry(self, event: RetryEvent) -> None:
        self.retries += 1
        log.info("%s", event.describe())
        if self.on_retry is not None:
            self.on_retry(event)


class StderrRetryLines:
    """Retries on stderr, at most one line a second: many concurrent calls failing at once (a dropped
    network, a throttled stream) say so once, with how many more retries there were."""

    def __init__(self, every: float = 1.0) -> None:
        self._every = every
        self._next = 0.0
        self._unsaid = 0

    def __call__(self, event: RetryEvent) -> None:
        now = time.monotonic()
        if now < self._next:
            self._unsaid += 1
            return
        more = f" (+{self._unsaid} more retries)" if self._unsaid else ""
        self._next, self._unsaid = now + self._every, 0
        print(f"kconsole: {event.describe()}{more}", file=sys.stderr, flush=True)


def retryable(error: Exception, code: str | None, operation: str = "") -> bool:
    """Throttling and server hiccups are retried. LimitExceeded is not when it names the account's
    shard limit, nor on UpdateShardCount, where it means the rolling 24-hour call quota: no amount of
    waiting within a command fixes either, and the caller explains them."""
    if code in _TRANSIENT_CODES:
        # A write that failed as a whole with a server error may still have been applied: re-sending
        # it here would be blind. The producer retries puts itself and counts them; a change to a
        # stream is settled by reading the stream back.
        return is_read(operation)
    if code not in THROTTLE_CODES:
        return False
    if code == "LimitExceededException" and operation == "UpdateShardCount":
        return False
    return not (code == "LimitExceededException" and "shard limit" in error_message(error).lower())


def _seconds(value: float) -> str:
    return "none" if not value else f"{value:g} s"


@functools.lru_cache(maxsize=256)
def snake_case(operation: str) -> str:
    """botocore's method name for an operation: "ListShards" -> "list_shards" (once per operation)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()
