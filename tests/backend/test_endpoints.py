"""Endpoint, retry and timeout settings resolved the botocore way, and named in what the user sees."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from console.backend import BackendConfig, open_backend
from console.errors import BackendError, BadInput, EndpointUnreachable, NoCredentials

KINESIS_URL = "http://127.0.0.1:4567"


def args(**given) -> argparse.Namespace:
    base = {"local": False, "endpoint_url": None, "region": None, "profile": None}
    return argparse.Namespace(**{**base, **given})


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    """No AWS settings from the machine running the tests: empty config and credential files, no
    variables, no instance metadata (nothing may leave 127.0.0.1)."""
    for variable in list(os.environ):
        if variable.startswith("AWS_"):
            monkeypatch.delenv(variable)
    config = tmp_path / "config"
    config.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return config


def test_endpoint_precedence_follows_botocore(aws_env, monkeypatch):
    aws_env.write_text(
        "[default]\nendpoint_url = http://127.0.0.1:3\n[profile other]\nendpoint_url = http://127.0.0.1:4\n"
    )
    assert BackendConfig.from_args(args()).label == "endpoint http://127.0.0.1:3 (profile default)"
    assert BackendConfig.from_args(args(profile="other")).label == "endpoint http://127.0.0.1:4 (profile other)"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2")
    assert BackendConfig.from_args(args()).label == "endpoint http://127.0.0.1:2 (AWS_ENDPOINT_URL)"
    monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", "http://localhost:1")
    config = BackendConfig.from_args(args())
    assert (config.kind, config.endpoint_url, config.region) == ("endpoint", "http://localhost:1", "us-east-1")
    assert config.label == "endpoint http://localhost:1 (AWS_ENDPOINT_URL_KINESIS)"
    # --endpoint-url and --local win over anything configured
    assert BackendConfig.from_args(args(endpoint_url=KINESIS_URL)).label == f"endpoint {KINESIS_URL}"
    assert BackendConfig.from_args(args(local=True)).kind == "local"
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert BackendConfig.from_args(args()).label == "AWS eu-west-1"


def test_a_profile_services_section_names_the_kinesis_endpoint(aws_env):
    aws_env.write_text(
        "[profile dev]\nservices = dev-services\n"
        "[services dev-services]\nkinesis =\n  endpoint_url = http://127.0.0.1:7\n"
    )
    assert (
        BackendConfig.from_args(args(profile="dev")).label
        == "endpoint http://127.0.0.1:7 (profile dev, services dev-services)"
    )


@pytest.mark.usefixtures("aws_env")
def test_dummy_credentials_only_for_endpoints_on_this_machine(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://localhost:9")
    assert BackendConfig.from_args(args()).local_endpoint
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://vpce-1.kinesis.eu-west-1.vpce.amazonaws.com")
    assert not BackendConfig.from_args(args()).local_endpoint


@pytest.mark.usefixtures("aws_env")
async def test_a_remote_configured_endpoint_never_gets_dummy_credentials(monkeypatch):
    # Signing fails before any connection, so nothing is sent to the (unresolvable) host.
    monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", "https://kinesis.example.invalid")
    async with open_backend(BackendConfig.from_args(args())) as kinesis:
        with pytest.raises(NoCredentials, match="no AWS credentials"):
            await kinesis.stream_names()


@pytest.mark.usefixtures("aws_env")
def test_aws_profile_variable_is_named_when_missing(monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "nope")
    with pytest.raises(BadInput, match="AWS profile not found: 'nope'"):
        BackendConfig.from_args(args())
    with pytest.raises(BadInput, match="AWS profile not found: 'nope'"):
        BackendConfig.from_args(args(region="us-east-1"))


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("AWS_MAX_ATTEMPTS", "lots", "AWS_MAX_ATTEMPTS (or the profile's max_attempts) must be a whole number"),
        ("AWS_MAX_ATTEMPTS", "0", "from 1 to 100; got '0'"),
        ("AWS_RETRY_MODE", "eager", "must be one of legacy, standard, adaptive; got 'eager'"),
        ("AWS_ENDPOINT_URL", "kinesis.local:4567", "the endpoint URL from AWS_ENDPOINT_URL must be an http"),
    ],
)
@pytest.mark.usefixtures("aws_env")
def test_bad_aws_settings_are_one_line_bad_input(monkeypatch, variable, value, message):
    monkeypatch.setenv(variable, value)
    with pytest.raises(BadInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        BackendConfig.from_args(args(local=True) if variable != "AWS_ENDPOINT_URL" else args())


def test_settings_from_the_profile_and_the_options(aws_env):
    aws_env.write_text("[default]\nmax_attempts = 3\nretry_mode = adaptive\n")
    config = BackendConfig.from_args(args(endpoint_url=KINESIS_URL, cli_read_timeout=0, cli_connect_timeout=1.5))
    assert (config.max_attempts, config.retry_mode, config.read_timeout, config.connect_timeout) == (
        3,
        "adaptive",
        0.0,
        1.5,
    )
    with pytest.raises(BadInput, match="--cli-connect-timeout must be from 0"):
        BackendConfig.from_args(args(endpoint_url=KINESIS_URL, cli_connect_timeout=-1))


# ---- over HTTP: a server that fails every call, counting what reaches it ----------------------------


class _FailingKinesis(BaseHTTPRequestHandler):
    """Answers every Kinesis call with HTTP 500 InternalFailure (or not at all within `delay`)."""

    calls: ClassVar[dict[str, int]] = {}
    delay = 0.0

    def do_POST(self):  # http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        operation = self.headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
        type(self).calls[operation] = type(self).calls.get(operation, 0) + 1
        time.sleep(self.delay)
        body = json.dumps({"__type": "InternalFailure", "message": "injected"}).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


@pytest.fixture
def failing_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FailingKinesis)
    server.daemon_threads = True
    _FailingKinesis.calls = {}
    _FailingKinesis.delay = 0.0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _FailingKinesis
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("mode", ["legacy", "standard", "adaptive"])
@pytest.mark.usefixtures("aws_env")
async def test_max_attempts_is_honoured_but_a_put_is_never_resent_after_a_5xx(monkeypatch, failing_server, mode):
    url, handler = failing_server
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "3")
    monkeypatch.setenv("AWS_RETRY_MODE", mode)
    async with open_backend(BackendConfig.from_args(args(endpoint_url=url))) as kinesis:
        kinesis.backoff_base = 0.001
        kinesis.on_retry = None
        with pytest.raises(BackendError):
            await kinesis.stream_names()
        with pytest.raises(BackendError):
            await kinesis.put_records("s", [{"Data": b"x", "PartitionKey": "k"}])
        with pytest.raises(BackendError):
            await kinesis.put_record("s", b"x", "k")
    # three attempts in all, not botocore's retries on top of ours; a put may have been written, so once
    assert handler.calls == {"ListStreams": 3, "PutRecords": 1, "PutRecord": 1}


@pytest.mark.usefixtures("aws_env")
async def test_read_timeout_option_bounds_a_silent_server(failing_server, monkeypatch):
    url, handler = failing_server
    handler.delay = 3.0
    # A read that timed out is retried (it changes nothing); one attempt shows the timeout alone.
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    began = time.monotonic()
    async with open_backend(BackendConfig.from_args(args(endpoint_url=url, cli_read_timeout=0.5))) as kinesis:
        with pytest.raises(EndpointUnreachable, match=f"no answer from {url}.* in time"):
            await kinesis.stream_names()
    assert time.monotonic() - began < 2.5


def test_the_header_and_errors_name_the_configured_endpoint(local_kinesis):
    """As a shell user sees it: AWS_ENDPOINT_URL at a local server, no credentials anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ENDPOINT_URL=local_kinesis.endpoint_url,
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
    )
    listed = subprocess.run(
        [sys.executable, "-m", "console.cli", "streams", "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert isinstance(json.loads(listed.stdout), list)
    missing = subprocess.run(
        [sys.executable, "-m", "console.cli", "shards", "no-such-stream-here"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert missing.returncode == 1
    assert missing.stderr.startswith(
        "kconsole: error: stream 'no-such-stream-here' not found on endpoint "
        f"{local_kinesis.endpoint_url} (AWS_ENDPOINT_URL)"
    )


def answer(call, *args, **kwargs):
    """What a call returns, or the type of what it raises."""
    try:
        return call(*args, **kwargs)
    except Exception as error:  # compared, not handled
        return type(error)


REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-5", "cn-north-1", "us-gov-west-1", "us-iso-east-1", "xx-nowhere-1")


def test_the_lean_endpoint_resolver_answers_as_botocores_for_every_service_the_backend_calls():
    import botocore.session

    from console.backend.clients import ENDPOINT_PREFIXES, lean_endpoint_resolver

    session = botocore.session.get_session()
    full = session._get_internal_component("endpoint_resolver")
    lean = lean_endpoint_resolver(session)
    assert lean.uses_builtin_data == full.uses_builtin_data
    for service, prefix in ENDPOINT_PREFIXES.items():
        assert session.get_service_model(service).endpoint_prefix == prefix
        assert lean.get_available_endpoints(prefix) == full.get_available_endpoints(prefix)
        for region in REGIONS:
            assert answer(lean.get_partition_for_region, region) == answer(full.get_partition_for_region, region)
            for variant in ({}, {"use_fips_endpoint": True}, {"use_dualstack_endpoint": True}):
                assert answer(lean.construct_endpoint, prefix, region, **variant) == answer(
                    full.construct_endpoint, prefix, region, **variant
                ), (prefix, region, variant)
    assert full.get_available_endpoints("s3") and not lean.get_available_endpoints("s3")  # the rest is gone


@pytest.mark.usefixtures("aws_env")
async def test_clients_reach_the_same_aws_endpoints_with_the_lean_resolver():
    from aiobotocore.session import AioSession

    from console.backend.clients import ENDPOINT_PREFIXES, lean_endpoint_resolver

    lean_session, full_session = AioSession(), AioSession()
    lean_session._register_internal_component("endpoint_resolver", lean_endpoint_resolver(lean_session))
    for service in ENDPOINT_PREFIXES:
        for region in ("us-east-1", "cn-north-1", "us-gov-west-1"):
            urls = []
            for session in (lean_session, full_session):
                async with session.create_client(
                    service, region_name=region, aws_access_key_id="a", aws_secret_access_key="b"
                ) as client:
                    urls.append((client.meta.endpoint_url, client.meta.region_name))
            assert urls[0] == urls[1], (service, region)


def test_only_a_direct_plain_http_endpoint_skips_the_ca_bundle(monkeypatch):
    from console.backend.clients import plain_http

    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    assert plain_http(KINESIS_URL) and plain_http("HTTP://localhost:4567")
    assert not plain_http("https://kinesis.us-east-1.amazonaws.com")
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.example:3128")  # the proxy's TLS is verified
    assert not plain_http("http://kinesis.example:4567")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert plain_http(KINESIS_URL)


def test_data_files_are_found_as_botocores_loader_finds_them(tmp_path):
    import gzip

    from console.backend.clients import _load_json_data

    assert _load_json_data(str(tmp_path / "endpoints")) is None
    (tmp_path / "endpoints.json.gz").write_bytes(gzip.compress(b'{"from": "gz"}'))
    assert _load_json_data(str(tmp_path / "endpoints")) == {"from": "gz"}
    (tmp_path / "endpoints.json").write_text('{"from": "json", "é": 1}', encoding="utf-8")
    assert _load_json_data(str(tmp_path / "endpoints")) == {"from": "json", "é": 1}  # .json first, as botocore
