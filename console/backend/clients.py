"""aiobotocore clients: their settings, credentials and endpoints, and `open_backend`, which opens
them (and the embedded local server, for kind "local") and closes them all on exit.

Three kinds of backend: `aws` (the standard credential chain, --profile, --region), `endpoint` (any
Kinesis-compatible URL) and `local` (the embedded moto server, started in a child process here).
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console import patches
from console.backend.config import DEFAULT_LOCAL_REGION, DUMMY_CREDENTIALS, BackendConfig
from console.backend.errors import translate
from console.backend.heap import loading
from console.backend.kinesis import KinesisBackend
from console.errors import StreamNotFound
from console.words import counted

# botocore logs a failed credential refresh (an expired SSO token, say) as a WARNING with a traceback
# before raising; with no logging configured, Python's last-resort handler would print it all on
# stderr. The raised error is translated into one line; a configured root handler still gets the record.
for _library in ("botocore", "aiobotocore"):
    logging.getLogger(_library).addHandler(logging.NullHandler())


# The services the backend opens clients for, by their endpoint prefix in botocore's endpoints.json.
ENDPOINT_PREFIXES = {
    "kinesis": "kinesis",
    "cloudwatch": "monitoring",
    "dynamodb": "dynamodb",
    "sts": "sts",
    "lambda": "lambda",
    "firehose": "firehose",
    "pipes": "pipes",
    "kinesisanalyticsv2": "kinesisanalytics",
}


def lean_endpoint_resolver(session: Any) -> Any:
    """botocore's endpoint resolver holding the endpoints of the services the backend calls only.

    botocore keeps all of endpoints.json (some 400 services in every partition: ~7 MiB of Python
    objects) for the life of the session, though a client reads it only for its own service. Every
    partition, region and default stays; the answers for the services in ENDPOINT_PREFIXES are the
    same (tests/backend/test_endpoints.py compares them with the full resolver's)."""
    from botocore.regions import EndpointResolver

    loader = session.get_component("data_loader")
    for folder in loader.search_paths:  # the loader's own search order (a user's ~/.aws/models first)
        path = os.path.join(folder, "endpoints")
        endpoints = _load_json_data(path)
        if endpoints is not None:
            break
    else:
        from botocore.exceptions import DataNotFoundError

        raise DataNotFoundError(data_path="endpoints")
    kept = set(ENDPOINT_PREFIXES.values())
    for partition in endpoints.get("partitions", []):
        services = partition.get("services", {})
        partition["services"] = {name: services[name] for name in services.keys() & kept}
    return EndpointResolver(endpoints, uses_builtin_data=loader.is_builtin_path(path))


def _load_json_data(path: str) -> Any:
    """A botocore data file (`path` without its extension, .json tried before .json.gz, as botocore's
    JSONFileLoader does), parsed into plain dicts: botocore's loader builds an OrderedDict for every
    object, which doubles the parse of endpoints.json's 1.2 MB (~11 ms against ~5 ms of a start)."""
    for extension in (".json", ".json.gz"):
        full_path = path + extension
        if os.path.isfile(full_path):
            if extension == ".json":
                with open(full_path, "rb") as file:
                    return json.loads(file.read().decode("utf-8"))
            import gzip

            with gzip.open(full_path, "rb") as file:
                return json.loads(file.read().decode("utf-8"))
    return None


def plain_listing(parsed: Any) -> bool:
    """True when a ListShards answer is already what botocore's model-driven parse would make of it:
    a list of shards whose members are strings or structures of strings (all ListShards has)."""
    if not isinstance(parsed, dict) or not isinstance(parsed.get("NextToken", ""), str):
        return False
    shards = parsed.get("Shards", [])
    if not isinstance(shards, list):
        return False
    for shard in shards:
        if type(shard) is not dict:
            return False
        for value in shard.values():
            if type(value) is dict:
                if not all(type(item) is str for item in value.values()):
                    return False
            elif type(value) is not str:
                return False
    return True


_PUT_RECORDS_MEMBERS = frozenset({"FailedRecordCount", "Records", "EncryptionType"})
_PUT_RECORDS_ENTRY_MEMBERS = frozenset({"SequenceNumber", "ShardId", "ErrorCode", "ErrorMessage"})


def plain_put_records(parsed: Any) -> bool:
    """True when a PutRecords answer is already what botocore's model-driven parse would make of it:
    only PutRecordsOutput's members, a whole-number failure count, and entries of its string members
    (botocore would drop an unknown or null member, so such an answer is not plain)."""
    if type(parsed) is not dict or not parsed.keys() <= _PUT_RECORDS_MEMBERS:
        return False
    if type(parsed.get("FailedRecordCount", 0)) is not int or type(parsed.get("EncryptionType", "")) is not str:
        return False
    records = parsed.get("Records", [])
    if type(records) is not list:
        return False
    for entry in records:
        if type(entry) is not dict or not entry.keys() <= _PUT_RECORDS_ENTRY_MEMBERS:
            return False
        for value in entry.values():
            if type(value) is not str:
                return False
    return True


# Answers whose shapes are strings, whole numbers and structures or lists of them, named as on the
# wire: the model-driven parse (a Python call per member) only copies them. ListShards: ~0.1 s of CPU
# for 10,000 shards, the console's first load; PutRecords: a sixth of the producer's CPU per record.
PLAIN_ANSWERS = {"ListShardsOutput": plain_listing, "PutRecordsOutput": plain_put_records}


def response_parser_factory() -> Any:
    """aiobotocore's response parsers, with the answers in PLAIN_ANSWERS taken as the JSON they are
    when they have their shape (console.patches, plain_answers). Anything else, or an answer of
    another shape, goes through the model as before."""
    return patches.response_parser_factory(PLAIN_ANSWERS)


class PlainPutRecordsSerializer:
    """botocore's request serializer for the checked-puts client, writing a PutRecords request whose
    entries are all plain ({"Data": bytes, "PartitionKey": str}, as KinesisBackend.put_records checks)
    straight to JSON: the model-driven walk is a Python call per member, a fifth of the producer's CPU
    per record. The request is botocore's own (its headers, the same JSON members, base64 as it writes
    it); any other request, or entry, goes through botocore's serializer."""

    def __init__(self, serializer: Any) -> None:
        self.botocore_serializer = serializer

    def serialize_to_request(self, parameters: dict[str, Any], operation_model: Any) -> dict[str, Any]:
        records = parameters.get("Records")
        if operation_model.name != "PutRecords" or type(records) is not list:
            return self._botocore(parameters, operation_model)
        encode = binascii.b2a_base64
        entries = []
        for record in records:
            data, key = record.get("Data"), record.get("PartitionKey")
            if len(record) != 2 or type(data) is not bytes or type(key) is not str:
                return self._botocore(parameters, operation_model)
            text = encode(data, newline=False).decode("ascii")
            # In the entry's own order, as botocore writes it.
            entries.append(
                {"Data": text, "PartitionKey": key}
                if next(iter(record)) == "Data"
                else {"PartitionKey": key, "Data": text}
            )
        serialized = self._botocore({**parameters, "Records": []}, operation_model)
        body = json.loads(serialized["body"])
        body["Records"] = entries
        serialized["body"] = json.dumps(body).encode("utf-8")
        return serialized

    def _botocore(self, parameters: dict[str, Any], operation_model: Any) -> dict[str, Any]:
        serialized: dict[str, Any] = self.botocore_serializer.serialize_to_request(parameters, operation_model)
        return serialized


def client_config(config: BackendConfig | None = None) -> Any:
    import platform

    from aiobotocore.config import AioConfig
    from botocore import __version__ as botocore_version

    from console import __version__

    config = config or BackendConfig()
    return AioConfig(
        connect_timeout=config.connect_timeout,
        read_timeout=config.read_timeout,
        # botocore makes one attempt; the call path (calls.py) retries throttling itself so it can say so,
        # and so a put that failed with a 5xx is never resent blindly. The mode still applies: adaptive
        # keeps its client-side rate limiter.
        retries={"mode": config.retry_mode, "total_max_attempts": 1},
        max_pool_connections=64,  # concurrent producers share one client
        # A fixed User-Agent: botocore otherwise rebuilds its long one (sanitising some forty parts) twice
        # per call, a tenth of the client's CPU per call when reading a thousand shards.
        user_agent=f"kconsole/{__version__} botocore/{botocore_version} Python/{platform.python_version()}",
    )


def load_service_models(session: Any, service: str) -> None:
    """Load (into the session's loader cache) what creating `service`'s client reads: its API model
    and its endpoint rules."""
    loader = session.get_component("data_loader")
    for kind in ("service-2", "endpoint-rule-set-1"):
        try:
            loader.load_service_model(service, kind)
        except Exception:  # a model this botocore lacks: creating the client says so, on its own terms
            return


def create_client(
    session: Any, service: str, region: str, endpoint_url: str | None, config: Any, credentials: tuple[str, str] | None
) -> Any:
    kwargs: dict[str, Any] = {"region_name": region, "config": config}
    if endpoint_url:
        kwargs["endpoint_url"] = endpoint_url
        if plain_http(endpoint_url):
            # No TLS on this connection: skip loading the CA bundle into a context it would never use.
            kwargs["verify"] = False
    if credentials:
        kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = credentials
    return session.create_client(service, **kwargs)


def plain_http(endpoint_url: str) -> bool:
    """True for an http:// endpoint reached directly: nothing on that connection speaks TLS. Through
    a proxy from the environment it is False, as the proxy's own TLS is verified with the same settings."""
    from urllib.parse import urlsplit

    from botocore.utils import get_environ_proxies

    return urlsplit(endpoint_url).scheme.lower() == "http" and not get_environ_proxies(endpoint_url)


async def credentials_for(session: Any, config: BackendConfig) -> tuple[str, str] | None:
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
        except Exception:  # a broken chain just means "none configured" here
            found = None
        return None if found is not None else DUMMY_CREDENTIALS
    return None


# Services whose every request the backend builds itself from checked values, so botocore's parameter
# check only walks it again: CloudWatch's GetMetricData (cloudwatch.py), whose 500 queries a call cost
# the check ~10 ms of CPU, as much as the rest of the request.
UNCHECKED_SERVICES = frozenset({"cloudwatch"})


class SideClients:
    """The backend's clients for CloudWatch, DynamoDB, STS and the readers' services, each opened on first use and closed
    with the backend."""

    def __init__(
        self,
        session: Any,
        stack: contextlib.AsyncExitStack,
        *,
        region: str,
        endpoint_url: str | None,
        config: Any,
        credentials: tuple[str, str] | None,
    ) -> None:
        self._session = session
        self._stack = stack
        self._region = region
        self._endpoint_url = endpoint_url
        self._config = config
        self._credentials = credentials
        self._clients: dict[str, Any] = {}

    async def get(self, service: str) -> Any:
        if service not in self._clients:
            # The service's model read in a thread first (tens of ms of JSON a service): a console asks
            # for these clients while its UI loop serves keys, and the client then finds it cached.
            await asyncio.to_thread(load_service_models, self._session, service)
            config = self._config
            if service in UNCHECKED_SERVICES:
                from aiobotocore.config import AioConfig

                config = config.merge(AioConfig(parameter_validation=False))
            self._clients[service] = await self._stack.enter_async_context(
                create_client(self._session, service, self._region, self._endpoint_url, config, self._credentials)
            )
        return self._clients[service]


def parse_timestamp(value: Any) -> datetime:
    """Kinesis sends epoch seconds; botocore's default parser builds a dateutil tzlocal for each one
    (a fifth of the client's time decoding a 10,000-record page). Other forms go to botocore's parser."""
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, UTC)
    from botocore.utils import parse_timestamp as botocore_parse_timestamp

    parsed: datetime = botocore_parse_timestamp(value)
    return parsed


def _free_port() -> int:
    """A port free on the loopback now, for a server whose URL must be known before it listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _settled(future: asyncio.Future[Any]) -> None:
    """Wait for `future` to end, however it ends (its outcome is someone else's to report)."""
    await asyncio.gather(future, return_exceptions=True)


@dataclass(frozen=True)
class LocalStream:
    """The streams a command or the console works on, made on the embedded server (which starts empty
    every run) before the backend is handed over: `shards` open shards each, each made one said
    through `on_created`. In read-only mode (`read_only` names where it was set) nothing is made: a
    missing stream is not found."""

    names: tuple[str, ...]
    shards: int
    read_only: str | None = None
    on_created: Callable[[str], None] = lambda _said: None


async def make_local_streams(backend: KinesisBackend, wanted: LocalStream) -> None:
    async def make(name: str) -> None:
        if wanted.read_only is not None:
            try:
                await backend.describe_stream_summary(name)
            except StreamNotFound as error:
                raise StreamNotFound(
                    f"{error.message}; read-only mode ({wanted.read_only}) creates no stream, "
                    "not even on the embedded local Kinesis"
                ) from None
        elif await backend.ensure_stream(name, wanted.shards):
            wanted.on_created(
                f"created stream {name!r} with {counted(wanted.shards, 'shard')} on the embedded local Kinesis"
            )

    await asyncio.gather(*(make(name) for name in wanted.names))


@contextlib.asynccontextmanager
async def open_backend(
    config: BackendConfig, *, local_stream: LocalStream | None = None, wait_for_server: bool = True
) -> AsyncIterator[KinesisBackend]:
    """An open backend; for kind "local" also the embedded server, started first and stopped last
    (unless `config.endpoint_url` names one that is already running), with `local_stream` made there
    first. The one way the command line, the console and the MCP server open a backend. With
    `wait_for_server` False the backend is yielded while that server still boots (the console builds
    its screen meanwhile; it makes its stream with `make_local_streams` once the server answers): its
    port is chosen here, and every call waits until the server answers (`server_ready`)."""
    async with contextlib.AsyncExitStack() as stack:
        endpoint_url = config.endpoint_url
        local_server = None
        server_started: asyncio.Future[str] | None = None
        # kind "local" with an endpoint_url attaches to a running embedded server (tests, `local serve`).
        if config.kind == "local" and not endpoint_url:
            from console.backend.launcher import LocalKinesisServer

            local_server = LocalKinesisServer(port=0 if wait_for_server else _free_port())
            stack.push_async_callback(asyncio.to_thread, local_server.stop)
            # The server boots in its own process (most of a --local start) while this one loads
            # aiobotocore and builds its session; the client is made once the server answers.
            # (run_in_executor, not to_thread: the thread starts now, not at this coroutine's next await)
            server_started = asyncio.get_running_loop().run_in_executor(None, local_server.start)
            stack.push_async_callback(_settled, server_started)  # before the stop above, on the way out
        from botocore.exceptions import BotoCoreError

        region = config.region or DEFAULT_LOCAL_REGION
        try:
            with loading(freeze=True):
                patches.import_aiohttp()  # before aiobotocore brings it in
                from aiobotocore.session import AioSession

                session = AioSession(profile=config.profile)
                patches.use_endpoint_resolver(session, lean_endpoint_resolver)
                parsers = response_parser_factory()
                parsers.set_parser_defaults(timestamp_parser=parse_timestamp)
                session.register_component("response_parser_factory", parsers)
                credentials = await credentials_for(session, config)
                settings = client_config(config)
                if server_started is not None and wait_for_server:
                    endpoint_url = await server_started
                elif server_started is not None:
                    endpoint_url = f"http://{local_server.host}:{local_server.port}"  # type: ignore[union-attr]
                client = await stack.enter_async_context(
                    create_client(session, "kinesis", region, endpoint_url, settings, credentials)
                )
        except BotoCoreError as error:
            translated = translate(error, operation="connect", where=config.label, endpoint_url=endpoint_url)
            if translated is None:
                raise
            raise translated from None
        # --endpoint-url and the embedded server stand for every service; an endpoint configured for
        # Kinesis alone (AWS_ENDPOINT_URL_KINESIS), like AWS itself, leaves botocore to resolve the others.
        shared = endpoint_url if config.endpoint_source is None else None
        side_clients = SideClients(
            session, stack, region=region, endpoint_url=shared, config=settings, credentials=credentials
        )

        async def checked_puts_client() -> Any:
            """A second Kinesis client without botocore's parameter check, for PutRecords requests whose
            every entry the backend has checked itself (KinesisBackend.put_records): the producer sends
            hundreds of records a request, and botocore's check walks each one again."""
            from aiobotocore.config import AioConfig

            unchecked = settings.merge(AioConfig(parameter_validation=False))
            puts = await stack.enter_async_context(
                create_client(session, "kinesis", region, endpoint_url, unchecked, credentials)
            )
            # This client's serializer is replaced; the main client keeps botocore's.
            patches.wrap_serializer(puts, PlainPutRecordsSerializer)
            return puts

        backend = KinesisBackend(
            config,
            client,
            region=region,
            endpoint_url=endpoint_url or client.meta.endpoint_url,
            side_client=side_clients.get,
            checked_puts_client=checked_puts_client,
        )
        backend.local_server = local_server
        if server_started is not None and not wait_for_server:
            backend.server_ready = server_started
        backend.opener = open_backend

        async def signing_credentials() -> Any:
            """What SubscribeToShard's requests are signed with: the client's own credentials."""
            if credentials:
                from botocore.credentials import Credentials

                return Credentials(*credentials)
            found = await session.get_credentials()
            if found is None:
                from botocore.exceptions import NoCredentialsError

                missing = NoCredentialsError()
                raise translate(missing, operation="SubscribeToShard", where=config.label, endpoint_url=None) or missing
            return await found.get_frozen_credentials()

        backend.signing_credentials = signing_credentials
        backend.timestamp_parser = parse_timestamp
        if local_stream is not None and config.kind == "local":
            await make_local_streams(backend, local_stream)
        yield backend
