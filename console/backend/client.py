"""The Kinesis adapter: every Kinesis (and CloudWatch/STS) call the console makes goes through here.

    async with open_backend(BackendConfig.from_args(args)) as kinesis:
        shards = await kinesis.all_shards("orders")

Three kinds of backend: `aws` (the standard credential chain, --profile, --region), `endpoint` (any
Kinesis-compatible URL) and `local` (the embedded moto server that open_backend starts in a child
process and stops on exit). Errors come out as one-line console errors (see errors.py); throttling
is retried here with exponential backoff and jitter and reported through `on_retry` and the logger.
So are failed connections, where that is safe: a read is asked again after a dropped connection
or a timeout; anything else only when the connection was never made. A put whose answer was lost
is never resent here: it may have been written, and only the producer can count it as a possible
duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import re
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal
from urllib.parse import urlsplit

from console.backend.errors import (
    NOT_CONNECTED,
    THROTTLE_CODES,
    connection_failure,
    error_code,
    error_message,
    translate,
)
from console.errors import BackendError, BadInput, ConsoleError, ResourceInUse, StreamNotFound
from console.topology.model import Shard, StreamSummary

log = logging.getLogger("console.backend")

# botocore logs a failed credential refresh (an expired SSO token, say) as a WARNING with a traceback
# before raising; with no logging configured, Python's last-resort handler would print it all on
# stderr. The raised error is translated into one line; a configured root handler still gets the record.
for _library in ("botocore", "aiobotocore"):
    logging.getLogger(_library).addHandler(logging.NullHandler())

DEFAULT_LOCAL_REGION = "us-east-1"
DUMMY_CREDENTIALS = ("kconsole-local", "kconsole-local")  # local servers check the signature's shape only

# AWS region names: two letters, one or more words, a number (us-east-1, us-gov-west-1, ap-southeast-5).
_AWS_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
# Anything botocore will put in a host name, for local servers that accept any region.
_HOST_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")

# Server-side hiccups worth another try, like throttling (but not reported as throttling).
_TRANSIENT_CODES = frozenset({"InternalFailure", "InternalFailureException", "ServiceUnavailable",
                              "ServiceUnavailableException", "InternalServerError",
                              "500", "502", "503", "504"})  # bare HTTP statuses: a gateway failing, no error body
_PUT_OPERATIONS = frozenset({"PutRecord", "PutRecords"})
# Calls that change nothing: asked again after a dropped connection or a timeout, they cannot do harm.
# Anything else is retried on a failed connection only when nothing was sent (connection refused).
_IDEMPOTENT_READS = frozenset({
    "ListStreams", "ListShards", "DescribeStream", "DescribeStreamSummary", "DescribeLimits",
    "DescribeStreamConsumer", "ListStreamConsumers", "GetShardIterator", "GetRecords",
    "GetMetricData", "GetMetricStatistics", "GetCallerIdentity",
    "GetItem", "BatchGetItem", "Query", "Scan", "DescribeTable",
})
DEFAULT_REQUEST_TIMEOUT = 20.0  # seconds without an answer before a request counts as failed
MAX_REQUEST_TIMEOUT = 300.0


RETRY_MODES = ("legacy", "standard", "adaptive")
MAX_ATTEMPTS_LIMIT = 100  # AWS_MAX_ATTEMPTS beyond this is a typo, not a retry policy
MAX_TIMEOUT_SECONDS = 3600.0
DEFAULT_CONNECT_TIMEOUT = 3.0
DEFAULT_READ_TIMEOUT = 20.0
DEFAULT_MAX_ATTEMPTS = 7  # one call and six retries of throttling or a server hiccup
# Hosts whose endpoint is a server on this machine: they get dummy credentials, never the user's.
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})


class _AwsSettings:
    """What botocore reads from the environment and ~/.aws/config for one profile, read once."""

    def __init__(self, profile: str | None) -> None:
        import botocore.session

        self.profile = profile
        self._session = botocore.session.Session(profile=profile)

    def get(self, name: str) -> Any:
        from botocore.exceptions import BotoCoreError, ProfileNotFound

        try:
            return self._session.get_config_variable(name)
        except ProfileNotFound:
            raise BadInput(f"AWS profile not found: {profile_name(self.profile)!r} (see ~/.aws/config)",
                           code="bad_profile") from None
        except BotoCoreError as error:  # an unparsable ~/.aws/config, say
            raise translate(error, operation="configure", where="AWS", endpoint_url=None) from None

    def region(self) -> str | None:
        """The region botocore would use: AWS_REGION / AWS_DEFAULT_REGION, then the profile's config."""
        for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
            if os.environ.get(variable):
                return os.environ[variable]
        return self.get("region")

    def configured_endpoint(self) -> tuple[str, str] | None:
        """(URL, where it was set) in botocore's order: AWS_ENDPOINT_URL_KINESIS, AWS_ENDPOINT_URL, the
        profile's `services` section, the profile's endpoint_url; none when
        AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true. Resolved here (botocore would connect to it
        anyway) so the header and errors name the endpoint in use, and where it came from."""
        if self.get("ignore_configured_endpoint_urls"):
            return None
        for variable in ("AWS_ENDPOINT_URL_KINESIS", "AWS_ENDPOINT_URL"):
            if os.environ.get(variable):
                return os.environ[variable], variable
        scoped = self.scoped_config()
        where = f"profile {profile_name(self.profile) or 'default'}"
        services = scoped.get("services")
        if services:
            section = self._session.full_config.get("services", {}).get(services, {})
            if (section.get("kinesis") or {}).get("endpoint_url"):
                return section["kinesis"]["endpoint_url"], f"{where}, services {services}"
        if scoped.get("endpoint_url"):
            return scoped["endpoint_url"], where
        return None

    def scoped_config(self) -> dict:
        from botocore.exceptions import ProfileNotFound

        try:
            return self._session.get_scoped_config()
        except ProfileNotFound:
            raise BadInput(f"AWS profile not found: {profile_name(self.profile)!r} (see ~/.aws/config)",
                           code="bad_profile") from None


def profile_name(given: str | None) -> str | None:
    """The profile botocore uses: --profile, else AWS_PROFILE, else AWS_DEFAULT_PROFILE."""
    return given or os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") or None


def is_local_endpoint(url: str | None) -> bool:
    return bool(url) and (urlsplit(url).hostname or "") in _LOCAL_HOSTS


def validate_region(region: str, *, kind: str) -> str:
    pattern = _AWS_REGION if kind == "aws" else _HOST_LABEL
    if not isinstance(region, str) or not pattern.match(region):
        example = "e.g. us-east-1, eu-west-1"
        raise BadInput(f"not a valid AWS region: {region!r} ({example})", code="bad_region")
    return region


# user:password@ before the host, with or without a scheme.
_USERINFO = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*://)?)[^/?#\s]*@")


def without_userinfo(url: str) -> str:
    """`url` without any user:password@: Kinesis requests are signed with AWS credentials (aiohttp
    refuses credentials in a URL besides), and a password must never reach an error, a header or JSON."""
    return _USERINFO.sub(r"\1", url, count=1)


def validate_endpoint_url(url: str) -> str:
    """An http(s) URL with a host and, if given, a port from 1 to 65535, returned without any
    user:password@; BadInput otherwise (botocore would fail later with a bare ValueError traceback on a
    port out of range or a broken IPv6 host). Only the URL without credentials is ever shown."""
    url = without_userinfo(url)
    problem = None
    if not re.match(r"^https?://[^/\s]+", url):
        problem = "must be an http:// or https:// URL"
    else:
        try:
            parts = urlsplit(url)
            port = parts.port
            if not parts.hostname:
                problem = "has no host name"
            elif port is not None and not 1 <= port <= 65535:
                problem = "has a port outside 1..65535"
        except ValueError as error:  # "Port out of range 0-65535", "Invalid IPv6 URL", a non-numeric port
            problem = f"is not a valid URL ({error})"
    if problem:
        raise BadInput(f"--endpoint-url {problem}; got {url!r}", code="usage")
    return url


def check_backend_options(args: Any) -> None:
    """The backend options make sense together: --local or --endpoint-url, not both, and a usable URL.
    Every command checks this at parse time, even one that stays offline, so a mistake is never ignored."""
    endpoint_url = getattr(args, "endpoint_url", None)
    if getattr(args, "local", False) and endpoint_url is not None:
        raise BadInput("--local and --endpoint-url cannot be used together", code="usage")
    if endpoint_url is not None:
        validate_endpoint_url(endpoint_url)


def validate_request_timeout(seconds: Any) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= MAX_REQUEST_TIMEOUT:
        raise BadInput(f"--request-timeout must be more than 0 and at most {MAX_REQUEST_TIMEOUT:g} seconds; "
                       f"got {seconds!r}", code="usage")
    return float(seconds)


def validate_timeout(value: Any, option: str) -> float:
    """Seconds from 0 to an hour, as the AWS CLI takes them; 0 means no timeout (aiohttp, under
    aiobotocore, waits without limit on 0, where None would get botocore's default)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_TIMEOUT_SECONDS:
        raise BadInput(f"{option} must be from 0 (no timeout) to {MAX_TIMEOUT_SECONDS:g} seconds; got {value!r}",
                       code="usage")
    return float(value)


@dataclass(frozen=True)
class BackendConfig:
    kind: Literal["aws", "endpoint", "local"] = "aws"
    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    # Where endpoint_url came from when not --endpoint-url: AWS_ENDPOINT_URL_KINESIS, a profile, ...
    endpoint_source: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    retry_mode: str = "standard"

    @classmethod
    def from_args(cls, args: Any) -> "BackendConfig":
        """--local wins the kind, then --endpoint-url, then an endpoint configured the botocore way
        (see _AwsSettings.configured_endpoint), else real AWS; the region comes from --region, the AWS
        environment or the profile, and defaults to us-east-1 for local and endpoint backends. Retries
        follow AWS_MAX_ATTEMPTS / AWS_RETRY_MODE (or the profile's), timeouts --cli-*-timeout."""
        local = bool(getattr(args, "local", False))
        endpoint_url = getattr(args, "endpoint_url", None)
        profile = getattr(args, "profile", None)
        check_backend_options(args)
        if endpoint_url:
            endpoint_url = validate_endpoint_url(endpoint_url)  # user:password@ dropped, never printed
        source = None
        timeouts = {field: validate_timeout(getattr(args, option.replace("-", "_")[2:]), option)
                    for field, option in (("connect_timeout", "--cli-connect-timeout"),
                                          ("read_timeout", "--cli-read-timeout"))
                    if getattr(args, option.replace("-", "_")[2:], None) is not None}
        request_timeout = getattr(args, "request_timeout", None)
        if request_timeout is not None:
            if "read_timeout" in timeouts and timeouts["read_timeout"] != request_timeout:
                raise BadInput("--request-timeout and --cli-read-timeout are the same setting; give one", code="usage")
            timeouts["read_timeout"] = validate_request_timeout(request_timeout)
        read_timeout = timeouts.get("read_timeout", DEFAULT_READ_TIMEOUT)
        if "connect_timeout" not in timeouts and read_timeout:
            timeouts["connect_timeout"] = min(DEFAULT_CONNECT_TIMEOUT, read_timeout)
        settings = _AwsSettings(profile)
        if not local and not endpoint_url:
            configured = settings.configured_endpoint()
            if configured:
                endpoint_url, source = configured
                endpoint_url = _validate_configured_endpoint(endpoint_url, source)
        kind = "local" if local else "endpoint" if endpoint_url else "aws"
        region = getattr(args, "region", None)
        if region is None and kind != "local":
            region = settings.region()
        if region is None:
            if kind == "aws":
                raise BadInput("no AWS region configured: pass --region, set AWS_REGION, "
                               "or set one in the profile", code="bad_region")
            region = DEFAULT_LOCAL_REGION
        validate_region(region, kind=kind)
        retry_mode, max_attempts = _retry_settings(settings)
        return cls(kind=kind, region=region, profile=profile,
                   endpoint_url=endpoint_url if kind == "endpoint" else None, endpoint_source=source,
                   max_attempts=max_attempts, retry_mode=retry_mode, **timeouts)

    @property
    def label(self) -> str:
        """Short header text: 'AWS eu-west-1 (profile prod)', 'local (embedded)', 'endpoint http://...',
        'endpoint http://... (AWS_ENDPOINT_URL)'."""
        if self.kind == "local":
            return "local (embedded)"
        if self.kind == "endpoint":
            return f"endpoint {self.endpoint_url}" + (f" ({self.endpoint_source})" if self.endpoint_source else "")
        profile = f" (profile {self.profile})" if self.profile else ""
        return f"AWS {self.region or '?'}{profile}"

    @property
    def local_endpoint(self) -> bool:
        """A server on this machine: given dummy credentials when the chain has none, as --endpoint-url is."""
        return self.kind == "endpoint" and (self.endpoint_source is None or is_local_endpoint(self.endpoint_url))


def _validate_configured_endpoint(url: str, source: str) -> str:
    try:
        return validate_endpoint_url(url)
    except BadInput as error:
        raise BadInput(str(error).replace("--endpoint-url", f"the endpoint URL from {source}"),
                       code="bad_endpoint") from None


def _retry_settings(settings: _AwsSettings) -> tuple[str, int]:
    """AWS_RETRY_MODE and AWS_MAX_ATTEMPTS (or retry_mode / max_attempts in the profile), checked.
    Read as given, not through botocore's defaults: unset means kconsole's own (standard, 7)."""
    profile = settings.scoped_config()
    mode = os.environ.get("AWS_RETRY_MODE") or profile.get("retry_mode") or "standard"
    if mode not in RETRY_MODES:
        raise BadInput(f"AWS_RETRY_MODE (or the profile's retry_mode) must be one of {', '.join(RETRY_MODES)}; "
                       f"got {mode!r}", code="bad_aws_config")
    given = os.environ.get("AWS_MAX_ATTEMPTS") or profile.get("max_attempts")
    if given is None:
        return mode, DEFAULT_MAX_ATTEMPTS
    try:
        attempts = int(str(given).strip())
    except ValueError:
        attempts = 0
    if not 1 <= attempts <= MAX_ATTEMPTS_LIMIT:
        raise BadInput(f"AWS_MAX_ATTEMPTS (or the profile's max_attempts) must be a whole number from 1 to "
                       f"{MAX_ATTEMPTS_LIMIT}; got {given!r}", code="bad_aws_config")
    return mode, attempts


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


class KinesisBackend:
    """One open connection to a Kinesis endpoint. Create through `open_backend`."""

    # An endpoint never reached since the backend opened is more likely a wrong URL than a restarting
    # server: refused connections there get only a couple of quick retries, so a typo fails fast.
    max_retries_never_reached = 2
    backoff_base = 0.2  # seconds; doubles per retry up to backoff_cap, with jitter
    backoff_cap = 5.0

    def __init__(self, config: BackendConfig, client: Any, *, region: str, endpoint_url: str | None,
                 session: Any = None, stack: contextlib.AsyncExitStack | None = None,
                 client_config: Any = None, credentials: tuple[str, str] | None = None) -> None:
        self.config = config
        # Throttling and server hiccups are retried here, not in botocore, so each retry can be shown;
        # AWS_MAX_ATTEMPTS counts the first call, as botocore's does.
        self.max_retries = config.max_attempts - 1
        self.region = region
        self.endpoint_url = endpoint_url
        self._client = client
        self._session = session
        self._stack = stack
        self._client_config = client_config
        self._credentials = credentials
        self._side_clients: dict[str, Any] = {}
        # Called on every retry. The default says so on stderr (CLI); the UI replaces it with a status line.
        self.on_retry: Callable[[RetryEvent], None] | None = _StderrRetryLines()
        self.retries = 0  # total retried calls, for status lines
        self.local_server = None  # the LocalKinesisServer for kind "local"
        self._reached = False  # any call answered yet

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

    # ---- the one call path: retries and error translation -------------------------------------

    async def _call(self, operation: str, client: Any = None, *, service: str = "kinesis", **params: Any) -> dict:
        method = getattr(client or self._client, _snake(operation))
        attempt = 0
        while True:
            try:
                response = await method(**params)
                self._reached = True
                response.pop("ResponseMetadata", None)
                return response
            except ConsoleError:
                raise
            except Exception as error:  # noqa: BLE001 - every botocore failure is translated below
                code = error_code(error)
                failure = connection_failure(error)
                if failure is not None:
                    retry = operation in _IDEMPOTENT_READS or (failure == NOT_CONNECTED and operation not in _PUT_OPERATIONS)
                else:
                    retry = _retryable(error, code, operation)
                quick = failure == NOT_CONNECTED and not self._reached
                if retry and attempt < (self.max_retries_never_reached if quick else self.max_retries):
                    attempt += 1
                    delay = min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
                    event = RetryEvent(operation, failure or code, attempt, delay, connection=bool(failure))
                    if quick:  # a wrong URL says so once, in its error line, not in retry lines first
                        self.retries += 1
                    else:
                        self._report_retry(event)
                    await asyncio.sleep(delay)
                    continue
                raise await self._translate(error, operation, params, service) from None

    def _report_retry(self, event: RetryEvent) -> None:
        self.retries += 1
        log.info("%s", event.describe())
        if self.on_retry is not None:
            self.on_retry(event)

    async def _translate(self, error: Exception, operation: str, params: dict, service: str = "kinesis") -> Exception:
        translated = translate(error, operation=operation, where=self.label, endpoint_url=self.endpoint_url,
                               service=service)
        if translated is None:
            return error
        if service == "dynamodb" and isinstance(translated, StreamNotFound):
            return BadInput(f"DynamoDB table {params.get('TableName')!r} not found on {self.label}",
                            code="table_not_found")
        stream = params.get("StreamName")
        if isinstance(translated, StreamNotFound) and stream:
            names = await self._stream_names_or_none()
            if names is not None and stream in names:  # the stream is there: a shard or consumer is not
                return BadInput(f"not found on {self.label}: {translated}", code="not_found")
            return StreamNotFound(f"stream {stream!r} not found on {self.label}; {_streams_text(names)}")
        return translated

    async def _stream_names_or_none(self) -> list[str] | None:
        try:
            return await self.stream_names()
        except Exception:  # noqa: BLE001 - the listing is a courtesy; the not-found error stands alone
            return None

    async def _side_client(self, service: str) -> Any:
        """CloudWatch, DynamoDB and STS clients, opened on first use and closed with the backend."""
        if service not in self._side_clients:
            if self._session is None or self._stack is None:
                raise BackendError(f"{service} is not available on this backend")
            # --endpoint-url and the embedded server stand for every service; an endpoint configured
            # for Kinesis alone (AWS_ENDPOINT_URL_KINESIS) does not, so botocore resolves the others.
            shared = self.endpoint_url if self.config.endpoint_source is None else None
            self._side_clients[service] = await self._stack.enter_async_context(
                _create_client(self._session, service, self.region, shared,
                               self._client_config, self._credentials))
        return self._side_clients[service]

    # ---- streams -------------------------------------------------------------------------------

    async def stream_names(self) -> list[str]:
        names: list[str] = []
        params: dict[str, Any] = {"Limit": 100}
        while True:
            page = await self._call("ListStreams", **params)
            names.extend(page.get("StreamNames", []))
            if not page.get("HasMoreStreams") or not page.get("StreamNames"):
                return names
            params = {"Limit": 100, **({"NextToken": page["NextToken"]} if page.get("NextToken")
                                      else {"ExclusiveStartStreamName": names[-1]})}

    async def stream_summaries(self) -> list[dict]:
        """ListStreams' StreamSummaries, every page (name, ARN, status, mode, creation time: no shard
        counts), AWS-shaped: the quick first look at a region with many streams."""
        summaries: list[dict] = []
        params: dict[str, Any] = {"Limit": 1000}
        while True:
            page = await self._call("ListStreams", **params)
            listed = page.get("StreamSummaries")
            if listed is None:  # a server that predates StreamSummaries: names only
                listed = [{"StreamName": name, "StreamStatus": "?"} for name in page.get("StreamNames", [])]
            summaries.extend(listed)
            if not page.get("HasMoreStreams") or not listed:
                return summaries
            params = {"Limit": 1000, **({"NextToken": page["NextToken"]} if page.get("NextToken")
                                        else {"ExclusiveStartStreamName": listed[-1]["StreamName"]})}

    async def list_streams(self) -> list[StreamSummary]:
        names = await self.stream_names()
        limit = asyncio.Semaphore(8)

        async def describe(name: str) -> StreamSummary | None:
            async with limit:
                try:
                    return await self.describe_stream(name)
                except StreamNotFound:  # deleted between the listing and the describe
                    return None

        summaries = await asyncio.gather(*(describe(name) for name in names))
        return [summary for summary in summaries if summary is not None]

    async def describe_stream(self, stream: str) -> StreamSummary:
        raw = (await self._call("DescribeStreamSummary", StreamName=stream))["StreamDescriptionSummary"]
        metrics = tuple(m for group in raw.get("EnhancedMonitoring", []) for m in group.get("ShardLevelMetrics", []))
        return StreamSummary(
            name=raw["StreamName"],
            status=raw["StreamStatus"],
            mode=(raw.get("StreamModeDetails") or {}).get("StreamMode", "PROVISIONED"),
            open_shard_count=int(raw.get("OpenShardCount", 0)),
            retention_hours=int(raw.get("RetentionPeriodHours", 24)),
            encryption=raw.get("EncryptionType") or "NONE",
            arn=raw.get("StreamARN", ""),
            consumer_count=int(raw.get("ConsumerCount") or 0),
            enhanced_metrics=metrics,
        )

    async def create_stream(self, stream: str, shard_count: int | None, *, on_demand: bool = False) -> None:
        """CreateStream: `shard_count` shards in provisioned mode, or on-demand (no count: AWS sizes it)."""
        if on_demand:
            await self._call("CreateStream", StreamName=stream, StreamModeDetails={"StreamMode": "ON_DEMAND"})
            return
        if isinstance(shard_count, bool) or not isinstance(shard_count, int) or shard_count < 1:
            raise BadInput(f"shard count must be a whole number of at least 1; got {shard_count!r}")
        await self._call("CreateStream", StreamName=stream, ShardCount=shard_count)

    async def describe_stream_details(self, stream: str) -> dict:
        """DescribeStreamSummary's whole answer, AWS-shaped (the summary above keeps what the console shows)."""
        return (await self._call("DescribeStreamSummary", StreamName=stream))["StreamDescriptionSummary"]

    async def stream_tags(self, stream: str) -> dict[str, str]:
        tags: dict[str, str] = {}
        params: dict[str, Any] = {"StreamName": stream}
        while True:
            page = await self._call("ListTagsForStream", **params)
            tags.update({tag["Key"]: tag.get("Value", "") for tag in page.get("Tags", [])})
            if not page.get("HasMoreTags") or not page.get("Tags"):
                return tags
            params["ExclusiveStartTagKey"] = page["Tags"][-1]["Key"]

    async def increase_retention(self, stream: str, hours: int) -> None:
        await self._call("IncreaseStreamRetentionPeriod", StreamName=stream, RetentionPeriodHours=hours)

    async def decrease_retention(self, stream: str, hours: int) -> None:
        await self._call("DecreaseStreamRetentionPeriod", StreamName=stream, RetentionPeriodHours=hours)

    async def update_stream_mode(self, stream_arn: str, mode: str) -> None:
        await self._call("UpdateStreamMode", StreamARN=stream_arn, StreamModeDetails={"StreamMode": mode})

    async def start_encryption(self, stream: str, key_id: str) -> None:
        await self._call("StartStreamEncryption", StreamName=stream, EncryptionType="KMS", KeyId=key_id)

    async def stop_encryption(self, stream: str, key_id: str) -> None:
        await self._call("StopStreamEncryption", StreamName=stream, EncryptionType="KMS", KeyId=key_id)

    async def ensure_stream(self, stream: str, shard_count: int = 4) -> bool:
        """Create `stream` with `shard_count` shards unless it exists; wait until ACTIVE. True if created."""
        try:
            summary = await self.describe_stream(stream)
        except StreamNotFound:
            try:
                await self.create_stream(stream, shard_count)
                created = True
            except ResourceInUse:  # someone else created it in the meantime
                created = False
            await self.wait_for_active(stream)
            return created
        if summary.status != "ACTIVE":
            await self.wait_for_active(stream)
        return False

    async def wait_for_active(self, stream: str, timeout: float = 60.0) -> StreamSummary:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.05
        while True:
            summary = await self.describe_stream(stream)
            if summary.status == "ACTIVE":
                return summary
            if loop.time() + delay > deadline:
                raise BackendError(f"stream {stream!r} is still {summary.status} after {timeout:g} s", code="timeout")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def delete_stream(self, stream: str, *, enforce_consumer_deletion: bool = True) -> None:
        await self._call("DeleteStream", StreamName=stream, EnforceConsumerDeletion=enforce_consumer_deletion)

    # ---- shards --------------------------------------------------------------------------------

    async def list_shards(self, *, stream: str | None = None, next_token: str | None = None,
                          shard_filter: dict | None = None, max_results: int | None = None) -> dict:
        """One ListShards page, AWS-shaped. With `next_token` only NextToken (and MaxResults) are sent:
        AWS rejects StreamName or ShardFilter next to a NextToken."""
        params: dict[str, Any] = {}
        if next_token:
            params["NextToken"] = next_token
        else:
            if not stream:
                raise BadInput("list_shards needs a stream name or a next token")
            params["StreamName"] = stream
            if shard_filter:
                params["ShardFilter"] = shard_filter
        if max_results:
            params["MaxResults"] = max_results
        return await self._call("ListShards", **params)

    async def all_shards(self, stream: str, shard_filter: dict | None = None) -> list[Shard]:
        shards: list[Shard] = []
        page = await self.list_shards(stream=stream, shard_filter=shard_filter)
        while True:
            shards.extend(Shard.from_api(raw) for raw in page.get("Shards", []))
            token = page.get("NextToken")
            if not token:
                return shards
            page = await self.list_shards(next_token=token)

    # ---- writes --------------------------------------------------------------------------------

    async def put_record(self, stream: str, data: bytes, partition_key: str, *,
                         explicit_hash_key: int | None = None,
                         sequence_number_for_ordering: str | None = None) -> dict:
        params: dict[str, Any] = {"StreamName": stream, "Data": data, "PartitionKey": partition_key}
        if explicit_hash_key is not None:
            params["ExplicitHashKey"] = str(explicit_hash_key)
        if sequence_number_for_ordering is not None:
            params["SequenceNumberForOrdering"] = sequence_number_for_ordering
        return await self._call("PutRecord", **params)

    async def put_records(self, stream: str, records: list[dict]) -> dict:
        """`records` are AWS-shaped: {Data, PartitionKey, ExplicitHashKey?} (an int hash key is accepted).
        Per-record failures come back in the response's Records (ErrorCode), as from AWS."""
        entries = []
        for record in records:
            entry = {"Data": record["Data"], "PartitionKey": record["PartitionKey"]}
            if record.get("ExplicitHashKey") is not None:
                entry["ExplicitHashKey"] = str(record["ExplicitHashKey"])
            entries.append(entry)
        return await self._call("PutRecords", StreamName=stream, Records=entries)

    # ---- reads ---------------------------------------------------------------------------------

    async def get_shard_iterator(self, stream: str, shard_id: str, iterator_type: str, *,
                                 sequence_number: str | None = None,
                                 timestamp: datetime | None = None) -> str:
        params: dict[str, Any] = {"StreamName": stream, "ShardId": shard_id, "ShardIteratorType": iterator_type}
        if sequence_number is not None:
            params["StartingSequenceNumber"] = sequence_number
        if timestamp is not None:
            params["Timestamp"] = timestamp
        return (await self._call("GetShardIterator", **params))["ShardIterator"]

    async def get_records(self, shard_iterator: str, limit: int = 10000) -> dict:
        return await self._call("GetRecords", ShardIterator=shard_iterator, Limit=limit)

    # ---- resharding ----------------------------------------------------------------------------

    async def split_shard(self, stream: str, shard_id: str, new_starting_hash_key: int) -> None:
        await self._call("SplitShard", StreamName=stream, ShardToSplit=shard_id,
                         NewStartingHashKey=str(new_starting_hash_key))

    async def merge_shards(self, stream: str, shard_id: str, adjacent_shard_id: str) -> None:
        await self._call("MergeShards", StreamName=stream, ShardToMerge=shard_id, AdjacentShardToMerge=adjacent_shard_id)

    async def update_shard_count(self, stream: str, target: int) -> dict:
        return await self._call("UpdateShardCount", StreamName=stream, TargetShardCount=target,
                                ScalingType="UNIFORM_SCALING")

    async def describe_limits(self) -> dict:
        """The account's ShardLimit, OpenShardCount and on-demand stream counts (DescribeLimits)."""
        return await self._call("DescribeLimits")

    # ---- enhanced fan-out consumers ------------------------------------------------------------

    async def list_stream_consumers(self, stream_arn: str) -> list[dict]:
        """Every EFO consumer registered on the stream, AWS-shaped (ConsumerName, ConsumerARN,
        ConsumerStatus, ConsumerCreationTimestamp)."""
        consumers: list[dict] = []
        params: dict[str, Any] = {"StreamARN": stream_arn}
        while True:
            page = await self._call("ListStreamConsumers", **params)
            consumers.extend(page.get("Consumers", []))
            if not page.get("NextToken"):
                return consumers
            params = {"StreamARN": stream_arn, "NextToken": page["NextToken"]}

    async def describe_stream_consumer(self, stream_arn: str, name: str) -> dict:
        answer = await self._call("DescribeStreamConsumer", StreamARN=stream_arn, ConsumerName=name)
        return answer["ConsumerDescription"]

    async def register_stream_consumer(self, stream_arn: str, name: str) -> dict:
        return (await self._call("RegisterStreamConsumer", StreamARN=stream_arn, ConsumerName=name))["Consumer"]

    async def deregister_stream_consumer(self, stream_arn: str, name: str) -> None:
        await self._call("DeregisterStreamConsumer", StreamARN=stream_arn, ConsumerName=name)

    # ---- DynamoDB (KCL lease tables) -----------------------------------------------------------

    async def _dynamodb(self, operation: str, **params: Any) -> dict:
        return await self._call(operation, await self._side_client("dynamodb"), service="dynamodb", **params)

    async def table_names(self) -> list[str]:
        names: list[str] = []
        params: dict[str, Any] = {}
        while True:
            page = await self._dynamodb("ListTables", **params)
            names.extend(page.get("TableNames", []))
            if not page.get("LastEvaluatedTableName"):
                return names
            params = {"ExclusiveStartTableName": page["LastEvaluatedTableName"]}

    async def describe_table(self, table: str) -> dict:
        return (await self._dynamodb("DescribeTable", TableName=table))["Table"]

    async def scan_table(self, table: str, *, limit: int | None = None) -> list[dict]:
        """The table's items as DynamoDB returns them ({"S": ...}, {"N": ...}, {"SS": [...]}); with
        `limit`, at most that many (a sample to recognise the table by)."""
        items: list[dict] = []
        async for page in self.scan_pages(table, page_size=limit):
            items.extend(page)
            if limit is not None and len(items) >= limit:
                return items[:limit]
        return items

    async def scan_pages(self, table: str, *, page_size: int | None = None) -> AsyncIterator[list[dict]]:
        """The table's items a page at a time (DynamoDB's 1 MB pages, or `page_size` items), so a
        caller can work on one page while the next is read."""
        params: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        if page_size is not None:
            params["Limit"] = page_size
        while True:
            page = await self._dynamodb("Scan", **params)
            yield page.get("Items", [])
            if not page.get("LastEvaluatedKey"):
                return
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # ---- monitoring / identity -----------------------------------------------------------------

    async def enable_enhanced_monitoring(self, stream: str, metrics: list[str]) -> None:
        await self._call("EnableEnhancedMonitoring", StreamName=stream, ShardLevelMetrics=metrics)

    async def shard_metrics(self, stream: str, shard_ids: list[str], metrics: dict[str, str],
                            start: datetime, end: datetime,
                            period: int = 60) -> dict[str, dict[str, list[tuple[datetime, float]]]]:
        """Per-shard CloudWatch series ({shard id: {metric: points}}) of shard-level metrics
        ({metric name: statistic}; they need enhanced monitoring on AWS). One GetMetricData query per
        shard and metric, sent in pages of 500 (its limit): 10,000 shards x 4 metrics is 80 calls."""
        pairs = [(shard_id, metric) for shard_id in shard_ids for metric in metrics]
        result: dict[str, dict[str, list]] = {shard_id: {metric: [] for metric in metrics} for shard_id in shard_ids}
        for offset in range(0, len(pairs), 500):
            batch = pairs[offset:offset + 500]
            queries = [_metric_query(index, metric, metrics[metric], period, StreamName=stream, ShardId=shard_id)
                       for index, (shard_id, metric) in enumerate(batch)]
            for index, points in (await self._metric_data(queries, start, end)).items():
                shard_id, metric = batch[index]
                result[shard_id][metric].extend(points)
        return {shard_id: {metric: sorted(points) for metric, points in series.items()}
                for shard_id, series in result.items()}

    async def stream_metrics(self, stream: str, metrics: dict[str, str], start: datetime, end: datetime,
                             period: int = 60) -> dict[str, list[tuple[datetime, float]]]:
        """Stream-level CloudWatch series (free, no enhanced monitoring): {metric name: statistic}."""
        names = list(metrics)
        queries = [_metric_query(index, name, metrics[name], period, StreamName=stream)
                   for index, name in enumerate(names)]
        found = await self._metric_data(queries, start, end)
        return {name: sorted(found.get(index, [])) for index, name in enumerate(names)}

    async def streams_metrics(self, streams: list[str], metrics: dict[str, str], start: datetime, end: datetime,
                              period: int = 60) -> "StreamsMetrics":
        """Stream-level series of many streams ({stream: {metric: points}}): one query per stream and
        metric, 500 to a GetMetricData call (its limit), so 1,000 streams x 5 metrics is 10 calls. A
        query CloudWatch answers Forbidden or InternalError marks its stream; the others keep theirs."""
        pairs = [(stream, metric) for stream in streams for metric in metrics]
        found = StreamsMetrics({stream: {metric: [] for metric in metrics} for stream in streams}, {}, 0)
        for offset in range(0, len(pairs), QUERIES_PER_CALL):
            batch = pairs[offset:offset + QUERIES_PER_CALL]
            queries = [_metric_query(index, metric, metrics[metric], period, StreamName=stream)
                       for index, (stream, metric) in enumerate(batch)]
            statuses: dict[int, str] = {}
            points, calls = await self._metric_pages(queries, start, end, statuses)
            found.calls += calls
            for index, series in points.items():
                stream, metric = batch[index]
                found.series[stream][metric].extend(series)
            for index, message in statuses.items():
                found.problems.setdefault(batch[index][0], message)
        for series in found.series.values():
            for metric in series:
                series[metric].sort()
        return found

    async def _metric_data(self, queries: list[dict], start: datetime, end: datetime) -> dict[int, list]:
        """GetMetricData over every page: the points of query number i (its Id is f"m{i}")."""
        return (await self._metric_pages(queries, start, end))[0]

    async def _metric_pages(self, queries: list[dict], start: datetime, end: datetime,
                            statuses: dict[int, str] | None = None) -> tuple[dict[int, list], int]:
        """(points per query number, calls made); queries CloudWatch did not answer go into `statuses`."""
        cloudwatch = await self._side_client("cloudwatch")
        found: dict[int, list[tuple[datetime, float]]] = {}
        params: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
        calls = 0
        while True:
            page = await self._call("GetMetricData", cloudwatch, service="cloudwatch", **params)
            calls += 1
            for series in page.get("MetricDataResults", []):
                index = int(series["Id"][1:])
                found.setdefault(index, []).extend(zip(series.get("Timestamps", []), series.get("Values", [])))
                if statuses is not None and series.get("StatusCode") in ("Forbidden", "InternalError"):
                    messages = [m.get("Value", "") for m in series.get("Messages", []) if m.get("Value")]
                    statuses[index] = f"CloudWatch: {series['StatusCode']}" + (f" ({messages[0]})" if messages else "")
            if not page.get("NextToken"):
                return found, calls
            params["NextToken"] = page["NextToken"]

    async def caller_identity(self) -> str | None:
        """The caller's ARN, or None when STS cannot tell (no STS on a custom endpoint, say)."""
        try:
            sts = await self._side_client("sts")
            return (await self._call("GetCallerIdentity", sts, service="sts")).get("Arn")
        except ConsoleError:
            return None


@dataclass
class StreamsMetrics:
    series: dict[str, dict[str, list[tuple[datetime, float]]]]
    problems: dict[str, str]  # stream -> why its metrics are missing
    calls: int  # GetMetricData calls made, pages included


class _StderrRetryLines:
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


QUERIES_PER_CALL = 500  # GetMetricData's limit on MetricDataQueries


def _metric_query(index: int, metric: str, stat: str, period: int, **dimensions: str) -> dict:
    return {"Id": f"m{index}", "MetricStat": {
        "Metric": {"Namespace": "AWS/Kinesis", "MetricName": metric,
                   "Dimensions": [{"Name": name, "Value": value} for name, value in dimensions.items()]},
        "Period": period, "Stat": stat}}



def _retryable(error: Exception, code: str | None, operation: str = "") -> bool:
    """Throttling and server hiccups are retried. LimitExceeded is not when it names the account's
    shard limit, nor on UpdateShardCount, where it means the rolling 24-hour call quota: no amount of
    waiting within a command fixes either, and the caller explains them."""
    if code in _TRANSIENT_CODES:
        # A put that failed as a whole with a server error may still have been written: re-sending it
        # here would make a duplicate nobody counts. The producer retries those itself and counts them.
        return operation not in _PUT_OPERATIONS
    if code not in THROTTLE_CODES:
        return False
    if code == "LimitExceededException" and operation == "UpdateShardCount":
        return False
    return not (code == "LimitExceededException" and "shard limit" in error_message(error).lower())


def _streams_text(names: list[str] | None) -> str:
    if names is None:
        return "could not list the streams there"
    if not names:
        return "there are no streams there"
    shown = ", ".join(names[:20]) + (f" (+{len(names) - 20} more)" if len(names) > 20 else "")
    return f"streams there: {shown}"


def _snake(operation: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


def client_config(config: BackendConfig | None = None) -> Any:
    import platform

    from aiobotocore.config import AioConfig
    from botocore import __version__ as botocore_version

    from console import __version__

    config = config or BackendConfig()
    return AioConfig(
        connect_timeout=config.connect_timeout,
        read_timeout=config.read_timeout,
        # botocore makes one attempt; KinesisBackend._call retries throttling itself so it can say so,
        # and so a put that failed with a 5xx is never resent blindly. The mode still applies: adaptive
        # keeps its client-side rate limiter.
        retries={"mode": config.retry_mode, "total_max_attempts": 1},
        max_pool_connections=64,  # concurrent producers share one client
        # A fixed User-Agent: botocore otherwise rebuilds its long one (sanitising some forty parts) twice
        # per call, a tenth of the client's CPU per call when reading a thousand shards.
        user_agent=f"kconsole/{__version__} botocore/{botocore_version} Python/{platform.python_version()}",
    )


def _create_client(session: Any, service: str, region: str, endpoint_url: str | None,
                   config: Any, credentials: tuple[str, str] | None) -> Any:
    kwargs: dict[str, Any] = {"region_name": region, "config": config}
    if endpoint_url:
        kwargs["endpoint_url"] = endpoint_url
    if credentials:
        kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = credentials
    return session.create_client(service, **kwargs)


async def _credentials_for(session: Any, config: BackendConfig) -> tuple[str, str] | None:
    """Local servers get dummy credentials (never the user's real ones); --endpoint-url, or an endpoint
    on this machine set in the environment or profile, uses the configured chain if it yields anything,
    else dummies; AWS, and a remote endpoint configured the botocore way, always use the chain."""
    if config.kind == "local":
        return DUMMY_CREDENTIALS
    if config.local_endpoint:
        # A server on this machine checks no credentials, and asking the instance metadata service
        # (off EC2: a one-second timeout) or a container endpoint for some only delays the first call.
        resolver = session.get_component("credential_provider")
        for provider in ("container-role", "iam-role"):
            resolver.remove(provider)
        try:
            found = await session.get_credentials()
        except Exception:  # noqa: BLE001 - a broken chain just means "none configured" here
            found = None
        return None if found is not None else DUMMY_CREDENTIALS
    return None


def parse_timestamp(value: Any) -> datetime:
    """Kinesis sends epoch seconds; botocore's default parser builds a dateutil tzlocal for each one
    (a fifth of the client's time decoding a 10,000-record page). Other forms go to botocore's parser."""
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, timezone.utc)
    from botocore.utils import parse_timestamp as botocore_parse_timestamp

    return botocore_parse_timestamp(value)


@contextlib.asynccontextmanager
async def open_backend(config: BackendConfig) -> AsyncIterator[KinesisBackend]:
    """An open backend; for kind "local" also the embedded server, started first and stopped last
    (unless `config.endpoint_url` names one that is already running)."""
    from aiobotocore.session import AioSession
    from botocore.exceptions import BotoCoreError

    async with contextlib.AsyncExitStack() as stack:
        endpoint_url = config.endpoint_url
        local_server = None
        # kind "local" with an endpoint_url attaches to a running embedded server (tests, `local serve`).
        if config.kind == "local" and not endpoint_url:
            from console.backend.local import LocalKinesisServer

            local_server = LocalKinesisServer()
            stack.push_async_callback(asyncio.to_thread, local_server.stop)
            endpoint_url = await asyncio.to_thread(local_server.start)
        region = config.region or DEFAULT_LOCAL_REGION
        try:
            session = AioSession(profile=config.profile)
            session.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=parse_timestamp)
            credentials = await _credentials_for(session, config)
            settings = client_config(config)
            client = await stack.enter_async_context(
                _create_client(session, "kinesis", region, endpoint_url, settings, credentials))
        except BotoCoreError as error:
            translated = translate(error, operation="connect", where=config.label, endpoint_url=endpoint_url)
            if translated is None:
                raise
            raise translated from None
        backend = KinesisBackend(config, client, region=region, endpoint_url=endpoint_url or client.meta.endpoint_url,
                                 session=session,
                                 stack=stack, client_config=settings, credentials=credentials)
        backend.local_server = local_server
        yield backend
