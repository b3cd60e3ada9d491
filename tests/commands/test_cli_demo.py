"""`kconsole demo lease-table`: a KCL lease table the consumers views read back, on the embedded
server only."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from console.cli import main


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


async def kconsole(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, [str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


async def test_the_demo_lease_table_is_read_back_by_consumers(capsys, local_kinesis, kinesis, make_stream):
    stream = await make_stream(shards=3, prefix="demo")
    first = (await kinesis.all_shards(stream))[0]
    await kinesis.split_shard(stream, first.shard_id, first.starting_hash_key + 2**120)
    await kinesis.wait_for_active(stream)
    table = f"demo-{uuid.uuid4().hex[:8]}"
    endpoint = ("--endpoint-url", local_kinesis.endpoint_url)
    code, out, err = await kconsole(capsys, "demo", "lease-table", stream, "--table", table, *endpoint, "--json")
    assert code == 0, err
    assert json.loads(out) == {"stream": stream, "lease_table": table, "leases": 5}

    code, out, err = await kconsole(capsys, "consumers", stream, "--lease-table", table, *endpoint, "--json")
    assert code == 0, err
    leases = {lease["shard_id"]: lease for lease in json.loads(out)["leases"]}
    assert set(leases) == {shard.shard_id for shard in await kinesis.all_shards(stream)}
    assert leases[first.shard_id]["checkpoint"] == "SHARD_END" and leases[first.shard_id]["state"] == "finished"
    assert {lease["owner"] for lease in leases.values()} == {"worker-a", "worker-b"}

    code, _, err = await kconsole(capsys, "demo", "lease-table", stream, "--table", table, *endpoint)
    assert code == 2 and "already exists" in err  # a second run never overwrites a table


async def test_demo_data_never_goes_to_a_remote_endpoint_or_under_read_only(capsys, local_kinesis):
    code, _, err = await kconsole(
        capsys, "demo", "lease-table", "orders", "--endpoint-url", "https://kinesis.eu-west-1.amazonaws.com"
    )
    assert code == 2 and "only to the embedded server" in err and "Traceback" not in err
    code, _, err = await kconsole(
        capsys, "demo", "lease-table", "orders", "--endpoint-url", local_kinesis.endpoint_url, "--read-only"
    )
    assert code == 1 and "read-only" in err
