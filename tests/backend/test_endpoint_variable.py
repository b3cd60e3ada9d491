"""AWS_ENDPOINT_URL(_KINESIS), the SDKs' own endpoint variables, make an endpoint backend named for
what it is — so the README's examples run as written against `kconsole local serve`."""

from __future__ import annotations

import argparse

from console.backend import BackendConfig, open_backend


async def test_the_endpoint_variable_selects_the_server_and_names_it(local_kinesis, make_stream, monkeypatch):
    name = await make_stream(shards=1)
    monkeypatch.delenv("AWS_ENDPOINT_URL_KINESIS", raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", local_kinesis.endpoint_url)
    config = BackendConfig.from_args(argparse.Namespace())
    assert (config.kind, config.endpoint_url) == ("endpoint", local_kinesis.endpoint_url)
    async with open_backend(config) as kinesis:
        assert name in await kinesis.stream_names()
        assert kinesis.label == f"endpoint {local_kinesis.endpoint_url} (AWS_ENDPOINT_URL)"  # named with its source
    # The Kinesis-specific variable wins; --endpoint-url and --local win over both.
    monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", "http://127.0.0.1:1")
    assert BackendConfig.from_args(argparse.Namespace()).endpoint_url == "http://127.0.0.1:1"
    given = argparse.Namespace(endpoint_url=local_kinesis.endpoint_url)
    assert BackendConfig.from_args(given).endpoint_url == local_kinesis.endpoint_url
    assert BackendConfig.from_args(argparse.Namespace(local=True)).kind == "local"
