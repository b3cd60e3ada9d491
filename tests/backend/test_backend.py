"""The backend adapter against the embedded local Kinesis, and the child server's lifecycle."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC

import pytest
from botocore.exceptions import ClientError

from console.backend import BackendConfig, KinesisBackend, open_backend
from console.errors import (
    AccessDenied,
    BadInput,
    EndpointUnreachable,
    NoCredentials,
    ResourceInUse,
    StreamNotFound,
    Throttled,
)
from console.keyspace.hashkeys import even_split, md5_hash_key
from console.localserver.supervision import LocalKinesisServer


def args(**given) -> argparse.Namespace:
    base = {"local": False, "endpoint_url": None, "region": None, "profile": None}
    return argparse.Namespace(**{**base, **given})


# ---- configuration -------------------------------------------------------------------------------


def test_from_args_kinds_and_regions(monkeypatch):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    assert BackendConfig.from_args(args(local=True)) == BackendConfig(kind="local", region="us-east-1")
    aws = BackendConfig.from_args(args())
    assert (aws.kind, aws.region, aws.label) == ("aws", "eu-west-1", "AWS eu-west-1")
    endpoint = BackendConfig.from_args(args(endpoint_url="http://127.0.0.1:4567", region="ap-south-1"))
    assert (endpoint.kind, endpoint.region, endpoint.label) == (
        "endpoint",
        "ap-south-1",
        "endpoint http://127.0.0.1:4567",
    )
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    assert BackendConfig.from_args(args(endpoint_url="http://localhost:1")).region == "us-east-1"
    with pytest.raises(BadInput, match="no AWS region"):
        BackendConfig.from_args(args())


def test_profile_region_and_label(monkeypatch, tmp_path):
    config_file = tmp_path / "config"
    config_file.write_text("[profile prod]\nregion = eu-central-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config_file))
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    config = BackendConfig.from_args(args(profile="prod"))
    assert config.label == "AWS eu-central-1 (profile prod)"
    with pytest.raises(BadInput, match="profile not found: 'nope'"):
        BackendConfig.from_args(args(profile="nope"))


@pytest.mark.parametrize("region", ["us east 1", "US-EAST-1", "eu-west", "", "us-east-1/../x"])
def test_bad_region_is_bad_input(region):
    with pytest.raises(BadInput, match="not a valid AWS region"):
        BackendConfig.from_args(args(region=region))


def test_local_and_endpoint_are_exclusive():
    with pytest.raises(BadInput):
        BackendConfig.from_args(args(local=True, endpoint_url="http://x:1"))


# ---- the API through the adapter -----------------------------------------------------------------


async def test_streams_shards_and_records_round_trip(kinesis, make_stream):
    name = await make_stream(shards=3)
    summary = await kinesis.describe_stream_summary(name)
    assert (summary.status, summary.open_shard_count, summary.mode) == ("ACTIVE", 3, "PROVISIONED")
    assert name in {s.name for s in await kinesis.list_streams()}

    shards = await kinesis.all_shards(name)
    assert [(s.starting_hash_key, s.ending_hash_key) for s in shards] == even_split(3)

    keys = [f"key-{i}" for i in range(30)]
    reply = await kinesis.put_records(name, [{"Data": k.encode(), "PartitionKey": k} for k in keys])
    assert reply["FailedRecordCount"] == 0
    single = await kinesis.put_record(name, b"one", "solo", explicit_hash_key=shards[2].starting_hash_key)
    assert single["ShardId"] == shards[2].shard_id

    received = []
    for shard in shards:
        iterator = await kinesis.get_shard_iterator(name, shard.shard_id, "TRIM_HORIZON")
        for record in (await kinesis.get_records(iterator))["Records"]:
            received.append((shard.shard_id, record["PartitionKey"]))
    expected = {(next(s.shard_id for s in shards if s.contains(md5_hash_key(k))), k) for k in keys}
    assert set(received) == expected | {(shards[2].shard_id, "solo")}


async def test_monitoring_and_identity(kinesis, make_stream):
    from datetime import datetime, timedelta

    name = await make_stream(shards=2)
    await kinesis.enable_enhanced_monitoring(name, ["IncomingBytes", "IncomingRecords"])
    assert set((await kinesis.describe_stream_summary(name)).enhanced_metrics) == {"IncomingBytes", "IncomingRecords"}
    now = datetime.now(UTC)
    series = await kinesis.shard_metrics(
        name,
        ["shardId-000000000000", "shardId-000000000001"],
        {"IncomingBytes": "Sum"},
        now - timedelta(minutes=5),
        now,
    )
    # moto keeps no shard-level metrics of its own; the shape (one series per asked shard) is what matters here.
    assert series == {"shardId-000000000000": {"IncomingBytes": []}, "shardId-000000000001": {"IncomingBytes": []}}
    assert (await kinesis.caller_identity()).startswith("arn:aws:")


async def test_other_services_share_an_endpoint_only_when_it_stands_for_every_service(monkeypatch, local_kinesis):
    # Opening clients sends nothing; the credentials come from the environment, never a metadata service.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    for variable in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_KINESIS", "AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    async with open_backend(BackendConfig(kind="aws", region="eu-west-1")) as aws:
        cloudwatch = await aws._side_client("cloudwatch")
        assert cloudwatch.meta.endpoint_url == "https://monitoring.eu-west-1.amazonaws.com"
    given = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=local_kinesis.endpoint_url)
    async with open_backend(given) as endpoint:
        assert (await endpoint._side_client("dynamodb")).meta.endpoint_url == local_kinesis.endpoint_url
    configured = BackendConfig(
        kind="endpoint",
        region="us-east-1",
        endpoint_url=local_kinesis.endpoint_url,
        endpoint_source="AWS_ENDPOINT_URL_KINESIS",
    )
    async with open_backend(configured) as kinesis_only:
        assert (await kinesis_only._side_client("sts")).meta.endpoint_url == "https://sts.us-east-1.amazonaws.com"


async def test_all_shards_follows_pagination(kinesis, make_stream):
    name = await make_stream(shards=7)
    first = await kinesis.list_shards(stream=name, max_results=3)
    assert len(first["Shards"]) == 3 and first.get("NextToken")
    assert [s.shard_id for s in await kinesis.all_shards(name)] == [f"shardId-{i:012d}" for i in range(7)]


async def test_ensure_stream_creates_once(kinesis):
    from tests.conftest import unique_stream_name

    name = unique_stream_name("ensure")
    try:
        assert await kinesis.ensure_stream(name, 2) is True
        assert await kinesis.ensure_stream(name, 5) is False
        assert (await kinesis.describe_stream_summary(name)).open_shard_count == 2
    finally:
        await kinesis.delete_stream(name)


async def test_unknown_stream_lists_existing_streams(kinesis, make_stream):
    name = await make_stream(shards=1)
    with pytest.raises(StreamNotFound) as caught:
        await kinesis.all_shards("no-such-stream")
    message = str(caught.value)
    assert "'no-such-stream' not found on local 127.0.0.1:" in message and name in message
    assert "\n" not in message


class _FailingTransport:
    """Answers every call with one AWS error: moto cannot be made to deny access or reject credentials."""

    def __init__(self, code: str, message: str) -> None:
        self.error = ClientError({"Error": {"Code": code, "Message": message}}, "SplitShard")

    async def split_shard(self, **params):  # noqa: ARG002 - the backend's signature
        raise self.error


@pytest.mark.parametrize(
    "code, expected, text",
    [
        ("ResourceInUseException", ResourceInUse, "Stream s is UPDATING"),
        ("AccessDeniedException", AccessDenied, "access denied for kinesis:SplitShard on AWS eu-west-1"),
        ("UnrecognizedClientException", NoCredentials, "rejected the credentials"),
        ("InvalidArgumentException", BadInput, "refused SplitShard"),
    ],
)
async def test_aws_errors_become_one_line_console_errors(code, expected, text):
    backend = KinesisBackend(
        BackendConfig(kind="aws", region="eu-west-1"),
        _FailingTransport(code, "Stream s is\nUPDATING"),
        region="eu-west-1",
        endpoint_url=None,
    )
    with pytest.raises(expected) as caught:
        await backend.split_shard("s", "shardId-000000000000", 1)
    assert text in str(caught.value) and "\n" not in str(caught.value)


async def test_unreachable_endpoint_is_one_line():
    config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url="http://127.0.0.1:9")
    began = time.monotonic()
    async with open_backend(config) as backend:
        with pytest.raises(EndpointUnreachable) as caught:
            await backend.stream_names()
    assert str(caught.value) == "cannot reach http://127.0.0.1:9/: connection failed"
    assert time.monotonic() - began < 5


class _ThrottlingTransport:
    """Stands in for the aiobotocore client at the transport boundary: the server cannot be made to throttle."""

    def __init__(self, throttles: int, code: str = "LimitExceededException") -> None:
        self.throttles = throttles
        self.code = code
        self.calls = 0

    async def list_streams(self, **params):  # noqa: ARG002 - the backend's signature
        self.calls += 1
        if self.calls <= self.throttles:
            raise ClientError({"Error": {"Code": self.code, "Message": "Rate exceeded"}}, "ListStreams")
        return {"StreamNames": ["a"], "HasMoreStreams": False, "ResponseMetadata": {}}


async def test_throttling_is_retried_with_backoff_and_reported():
    transport = _ThrottlingTransport(throttles=3)
    backend = KinesisBackend(
        BackendConfig(kind="endpoint", endpoint_url="http://x"), transport, region="us-east-1", endpoint_url="http://x"
    )
    backend.backoff_base = 0.01
    events = []
    backend.on_retry = events.append
    assert await backend.stream_names() == ["a"]
    assert [e.attempt for e in events] == [1, 2, 3] and all(e.throttled for e in events)
    assert events[0].describe().startswith("throttled on ListStreams; retry 1 in ")
    assert events[2].delay > events[0].delay  # the backoff grows

    backend = KinesisBackend(
        BackendConfig(kind="endpoint", endpoint_url="http://x"),
        _ThrottlingTransport(99, "ProvisionedThroughputExceededException"),
        region="us-east-1",
        endpoint_url="http://x",
    )
    backend.backoff_base = 0.001
    with pytest.raises(Throttled, match="still throttled after retries"):
        await backend.stream_names()


# ---- the child server's lifecycle ----------------------------------------------------------------


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_server_starts_answers_and_stops():
    server = LocalKinesisServer()
    server.start()
    pid = server.pid
    assert server.running() and server.endpoint_url.startswith("http://127.0.0.1:")
    server.stop()
    assert not server.running()
    assert _gone(pid, 3)


_PARENT_SCRIPT = textwrap.dedent("""
    import asyncio, sys
    from console.backend import BackendConfig, open_backend

    async def main():
        async with open_backend(BackendConfig(kind="local")) as kinesis:
            print(kinesis.local_server.pid, flush=True)
            await asyncio.sleep(60)

    asyncio.run(main())
""")


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_no_orphan_when_the_parent_dies_or_is_interrupted(how):
    parent = subprocess.Popen([sys.executable, "-c", _PARENT_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        child_pid = int(parent.stdout.readline())
        os.kill(child_pid, 0)  # alive
        parent.send_signal(getattr(signal, how))
        parent.wait(10)
        assert _gone(child_pid, 5), f"server {child_pid} survived its parent's {how}"
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.stdout.close()


# ---- what a user sees: one line, the right exit code, no traceback ---------------------------------


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    from console.cli import main

    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(err: str, text: str) -> None:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kconsole: error: ") and text in lines[0], err


def test_cli_unknown_stream_lists_the_existing_ones(capsys, local_kinesis):
    code, out, err = run_cli(capsys, "streams", "--endpoint-url", local_kinesis.endpoint_url)  # warm the listing
    assert code == 0
    code, out, err = run_cli(capsys, "shards", "no-such-stream", "--endpoint-url", local_kinesis.endpoint_url)
    assert code == 1 and out == ""
    assert_one_line_error(err, "stream 'no-such-stream' not found on endpoint http://127.0.0.1:")
    assert "streams there:" in err or "there are no streams there" in err


def test_cli_unknown_stream_json_error(capsys, local_kinesis):
    import json

    code, out, _err = run_cli(
        capsys, "shards", "no-such-stream", "--json", "--endpoint-url", local_kinesis.endpoint_url
    )
    assert code == 1
    assert json.loads(out)["error"]["code"] == "stream_not_found"


def test_cli_unreachable_endpoint(capsys):
    code, _out, err = run_cli(capsys, "streams", "--endpoint-url", "http://127.0.0.1:9")
    assert code == 1
    assert_one_line_error(err, "cannot reach http://127.0.0.1:9/: connection failed")


@pytest.mark.parametrize("region", ["bad region", "EU-WEST-1", "eu_west_1"])
def test_cli_bad_region(capsys, region):
    code, _out, err = run_cli(capsys, "streams", "--region", region)
    assert code == 2
    assert_one_line_error(err, f"not a valid AWS region: {region!r}")


@pytest.mark.parametrize(
    "url, text",
    [
        ("http://127.0.0.1:99999", "Port out of range"),
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://127.0.0.1:abc", "not a valid URL"),
        ("http://127.0.0.1:0", "port outside 1..65535"),
        ("http://:4567", "no host name"),
        ("ftp://127.0.0.1:21", "http:// or https://"),
    ],
)
def test_cli_malformed_endpoint_url_is_bad_input(capsys, url, text):
    code, _out, err = run_cli(capsys, "streams", "--endpoint-url", url)
    assert code == 2
    assert_one_line_error(err, text)


def test_cli_https_to_a_plain_http_server(capsys, local_kinesis):
    tls_url = local_kinesis.endpoint_url.replace("http://", "https://")
    code, _out, err = run_cli(capsys, "streams", "--endpoint-url", tls_url)
    assert code == 1
    assert_one_line_error(err, f"TLS handshake with {tls_url}/ failed")
    assert "use an http:// URL" in err


def test_cli_endpoint_that_is_not_kinesis(capsys):
    """A web server that answers with an HTML error page: one short line, not the page."""
    import http.server
    import threading

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep stderr for what kconsole prints
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code, _out, err = run_cli(capsys, "streams", "--endpoint-url", f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        server.server_close()
    assert code == 1
    assert_one_line_error(err, "answered ListStreams with HTTP 501 and no Kinesis error; is it a Kinesis endpoint?")
    assert "<html" not in err.lower()


@pytest.mark.parametrize(
    "argv, option",
    [
        (["local", "serve", "--local"], "--local"),
        (["--endpoint-url", "http://127.0.0.1:4567", "local", "serve"], "--endpoint-url"),
    ],
)
def test_cli_local_serve_refuses_client_options(capsys, argv, option):
    """`local serve` is the server: a client option would be silently ignored, so it is refused."""
    code, _out, err = run_cli(capsys, *argv, "--port", "99999")  # never binds, even if the check were gone
    assert code == 2
    assert_one_line_error(err, f"kconsole local serve runs its own server; {option} does not apply")


def test_cli_no_credentials(capsys, monkeypatch, tmp_path):
    for variable in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    code, _out, err = run_cli(capsys, "streams", "--region", "eu-west-1")
    assert code == 1
    assert_one_line_error(err, "no AWS credentials found")


def _aws_home(tmp_path, config: str) -> dict:
    """An environment whose only AWS setting is `config` (as ~/.aws/config), for a kconsole subprocess."""
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_text(config)
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    return {**env, "HOME": str(tmp_path), "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.mark.parametrize(
    "config, exit_code, text",
    [
        (
            "[default]\nregion = eu-west-1\ncredential_process = /bin/false\n",
            1,
            "kconsole: error: cannot get AWS credentials: Error when retrieving credentials from custom-process",
        ),
        (
            "[default]\nregion = eu-west-1\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = r\n"
            "[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n",
            1,
            "kconsole: error: cannot get AWS credentials: Error loading SSO Token: Token for corp does not exist "
            "(an SSO profile? run: aws sso login)",
        ),
        (
            "[default\nregion = eu-west-1\n",
            2,
            "kconsole: error: the AWS configuration is broken: File contains no section",
        ),
    ],
)
def test_cli_credential_and_config_failures_are_one_line(tmp_path, config, exit_code, text):
    """A failing credential_process, an SSO profile never logged in, a broken ~/.aws/config: botocore
    raises (and logs a traceback as a warning first); the user sees one line."""
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "streams"],
        capture_output=True,
        text=True,
        env=_aws_home(tmp_path, config),
        timeout=60,
    )
    assert result.returncode == exit_code and result.stdout == ""
    assert result.stderr.startswith(text) and result.stderr.count("\n") == 1, result.stderr


def test_cli_error_in_a_real_process(local_kinesis):
    """Once end to end as a shell sees it: exit code and a single stderr line."""
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "shards", "missing-stream", "--endpoint-url", local_kinesis.endpoint_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert result.returncode == 1, result.stderr
    assert_one_line_error(result.stderr, "stream 'missing-stream' not found on endpoint")


async def test_local_serve_shares_one_server_and_stops_on_ctrl_c():
    import json

    serve = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "local", "serve", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = json.loads(serve.stdout.readline())["endpoint_url"]
        config = BackendConfig.from_args(args(endpoint_url=url, region="eu-west-1"))
        async with open_backend(config) as first, open_backend(config) as second:
            assert await first.ensure_stream("shared", 2) is True
            assert "shared" in await second.stream_names()  # a second client sees the same server
        serve.send_signal(signal.SIGINT)
        assert serve.wait(10) == 130  # Ctrl-C, as on every command
        assert "Traceback" not in serve.stderr.read()
        async with open_backend(config) as after:
            with pytest.raises(EndpointUnreachable):
                await after.stream_names()
    finally:
        if serve.poll() is None:
            serve.kill()
        serve.stdout.close()
        serve.stderr.close()


def test_server_stopped_the_moment_it_is_ready_exits_quietly():
    """A SIGTERM that lands while the server announces READY (a user's Ctrl-C at once) stops it
    without a traceback."""
    for _ in range(12):
        server = subprocess.Popen(
            [sys.executable, "-m", "console.localserver.main", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert server.stdout.readline().startswith(b"READY http://127.0.0.1:")
        server.terminate()
        _, stderr = server.communicate(timeout=10)
        assert b"Traceback" not in stderr, stderr.decode()[-500:]
