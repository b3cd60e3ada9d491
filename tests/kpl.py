"""What the KPL tests share: aggregates built by AWS's own RecordAggregator, and a fixture giving each
test both servers (the embedded one and kinesis-mock)."""

from __future__ import annotations

import json

import pytest
from aws_kinesis_agg.aggregator import RecordAggregator

from console.backend import BackendConfig, open_backend
from tests.conftest import StreamFactory

HOT_KEY = "hot-A"


def hot_keys(serial: int) -> list[str]:
    """Ten user keys, six of them HOT_KEY; the first (which places the aggregate) a cold one."""
    return [HOT_KEY if i % 5 >= 2 else f"cold-{serial}-{i}" for i in range(10)]


def hot_aggregate(serial: int) -> dict:
    """A PutRecords entry: ten user records packed by RecordAggregator (60% HOT_KEY), content
    {"serial": serial, "i": i}; outer key = the first user record's, as the library does."""
    aggregator = RecordAggregator()
    for i, key in enumerate(hot_keys(serial)):
        assert aggregator.add_user_record(key, json.dumps({"serial": serial, "i": i}).encode()) is None
    key, _, data = aggregator.clear_and_get().get_contents()
    return {"PartitionKey": key, "Data": data}


@pytest.fixture(params=["embedded", pytest.param("kinesis-mock", marks=pytest.mark.kinesis_mock)])
async def server(request, local_kinesis):
    """(backend, stream factory, endpoint URL) on each of the two servers."""
    url = (
        local_kinesis.endpoint_url
        if request.param == "embedded"
        else request.getfixturevalue("kinesis_mock").endpoint_url
    )
    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=url)) as backend:
        factory = StreamFactory(backend)
        yield backend, factory, url
        await factory.cleanup()
