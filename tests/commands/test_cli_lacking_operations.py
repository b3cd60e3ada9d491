"""An endpoint that lacks an operation (an older Kinesis-compatible server) costs one line where that
operation's answer goes, never the command. The servers here are the embedded one and kinesis-mock, each
behind the fault proxy answering UnknownOperationException for the operation it is made to lack."""

from __future__ import annotations

import json
import uuid
from urllib.parse import urlsplit

import pytest

from tests.commands.test_cli_put import kconsole, make
from tests.faultproxy import FaultProxy, Faults


@pytest.fixture(params=["moto", "kinesis-mock"])
def endpoint(request, local_kinesis):
    if request.param == "moto":
        return local_kinesis.endpoint_url
    return request.getfixturevalue("kinesis_mock").endpoint_url


async def test_without_list_stream_consumers_describe_consumers_and_delete_cost_one_line(endpoint):
    stream = f"lacking-{uuid.uuid4().hex[:8]}"
    await make(endpoint, stream, shards=1)
    async with FaultProxy(urlsplit(endpoint).port, Faults.lacking("ListStreamConsumers")) as proxy:
        url = ["--endpoint-url", proxy.endpoint_url]

        code, out, err = await kconsole("stream", "describe", stream, "--json", *url)
        assert code == 0, err
        document = json.loads(out)
        assert document["stream_name"] == stream and document["consumers"] is None
        lines = [line for line in err.strip().splitlines() if "; retry " not in line]  # the proxy's own drops
        assert len(lines) == 1, err
        assert lines[0].startswith("kconsole: consumers unknown: this endpoint does not support ListStreamConsumers")

        code, out, err = await kconsole("consumers", stream, "--json", *url)
        assert code == 0, err
        report = json.loads(out)
        assert report["efo_consumers"] is None
        assert "does not support ListStreamConsumers" in report["efo_consumers_unknown"]
        code, out, err = await kconsole("consumers", stream, *url)
        assert code == 0 and "EFO consumers unknown: this endpoint does not support ListStreamConsumers" in out

        code, out, err = await kconsole("stream", "delete", stream, "--yes", "--wait", *url)
        assert code == 0, err
        assert "consumers unknown" in err
    code, _, err = await kconsole("stream", "describe", stream, "--endpoint-url", endpoint)
    assert code == 1 and "not found" in err.lower(), err


async def test_without_update_shard_count_a_rescale_says_the_endpoint_lacks_it(endpoint):
    stream = f"lacking-{uuid.uuid4().hex[:8]}"
    await make(endpoint, stream, shards=1)
    async with FaultProxy(urlsplit(endpoint).port, Faults.lacking("UpdateShardCount")) as proxy:
        code, _out, err = await kconsole(
            "reshard", "scale", stream, "--to", "2", "--yes", "--endpoint-url", proxy.endpoint_url
        )
    assert code == 1, err
    assert "this endpoint does not support UpdateShardCount" in err, err
    assert "UnknownOperationException" not in err


async def test_settings_a_server_leaves_out_are_shown_as_unknown_not_as_aws_defaults(local_kinesis, kinesis_mock):
    """kinesis-mock predates record distribution, max record size and warm throughput: its answer has none of
    them, and describe says unknown; the embedded server answers them, and describe shows its values."""
    for endpoint, knows in ((local_kinesis.endpoint_url, True), (kinesis_mock.endpoint_url, False)):
        stream = f"settings-{uuid.uuid4().hex[:8]}"
        await make(endpoint, stream, shards=1)
        code, out, err = await kconsole("stream", "describe", stream, "--json", "--endpoint-url", endpoint)
        assert code == 0, err
        document = json.loads(out)
        code, text, err = await kconsole("stream", "describe", stream, "--endpoint-url", endpoint)
        assert code == 0, err
        rows = dict(line.split(None, 1) for line in text.splitlines()[1:] if line.strip())
        code, out, err = await kconsole("streams", "--json", "--endpoint-url", endpoint)
        listed = next(row for row in json.loads(out) if row["name"] == stream)
        if knows:
            assert document["record_distribution"] == "USER_PARTITION_KEY" and document["max_record_size_kib"] == 1024
            assert rows["record_distribution"].strip() == "USER_PARTITION_KEY"
            assert listed["max_record_size_kib"] == 1024
        else:
            assert document["record_distribution"] is None and document["max_record_size_kib"] is None
            assert rows["record_distribution"].strip() == "unknown" and rows["max_record_size_kib"].strip() == "unknown"
            assert listed["record_distribution"] is None and listed["max_record_size_kib"] is None


async def test_tags_fall_back_to_the_by_name_calls_where_the_endpoint_lacks_tagging_by_arn(endpoint):
    stream = f"lacking-{uuid.uuid4().hex[:8]}"
    await make(endpoint, stream, shards=1)
    by_arn = Faults.lacking("TagResource", "UntagResource", "ListTagsForResource")
    async with FaultProxy(urlsplit(endpoint).port, by_arn) as proxy:
        url = ["--endpoint-url", proxy.endpoint_url]
        code, out, err = await kconsole("stream", "tag", stream, "team=orders", "tier=1", "--yes", *url)
        assert code == 0, err
        code, out, err = await kconsole("stream", "untag", stream, "tier", "--yes", *url)
        assert code == 0, err
        assert proxy.stats["unknown:TagResource"] and proxy.stats["unknown:UntagResource"]
    code, out, err = await kconsole("stream", "describe", stream, "--json", "--endpoint-url", endpoint)
    assert json.loads(out)["tags"] == {"team": "orders"}, out
