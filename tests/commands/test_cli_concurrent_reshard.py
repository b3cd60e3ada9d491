"""Two operators at once: two `reshard scale` processes on one stream, started together. Whatever
the interleaving, at most one of them may say it is done as planned; the other exits 1 saying the
stream changed under it (before its call: the plan is stale; after it: changed by someone else
meanwhile, naming the shards). The stream holds the success's target unless the other call landed
after the success was checked, and then the other one said so. The proxy holds each
UpdateShardCount two seconds before the server sees it, so the two runs overlap."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from urllib.parse import urlsplit

import botocore.session

from tests.conftest import unique_stream_name
from tests.faultproxy import FaultProxy, Faults


async def scale(stream, target, endpoint, data):
    env = dict(os.environ, KCONSOLE_DATA_DIR=str(data), KCONSOLE_CONFIG=str(data / "config.toml"))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "reshard",
        "scale",
        stream,
        "--to",
        str(target),
        "--yes",
        "--wait",
        "--json",
        "--endpoint-url",
        endpoint,
        "--region",
        "us-east-1",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return target, process.returncode, out.decode(), err.decode()


async def test_two_rescales_at_once_never_both_claim_success(tmp_path, local_kinesis, kinesis):
    client = botocore.session.get_session().create_client(
        "kinesis",
        region_name="us-east-1",
        endpoint_url=local_kinesis.endpoint_url,
        aws_access_key_id="truth",
        aws_secret_access_key="truth",
    )
    for round_ in range(2):
        stream = unique_stream_name("race")
        await kinesis.create_stream(stream, 2)
        await kinesis.wait_for_active(stream)
        held_back = Faults(stall=1.0, stall_seconds=2.0, operations=frozenset({"UpdateShardCount"}))
        try:
            async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port, held_back) as proxy:
                runs = await asyncio.gather(
                    *(scale(stream, target, proxy.endpoint_url, tmp_path / f"{round_}-{target}") for target in (3, 4))
                )
            shards = client.list_shards(StreamName=stream)["Shards"]
        finally:
            await kinesis.delete_stream(stream)
        held = sum("EndingSequenceNumber" not in s["SequenceNumberRange"] for s in shards)
        succeeded = [target for target, code, _, _ in runs if code == 0]
        assert len(succeeded) <= 1, runs
        for _target, code, out, err in runs:
            assert "Traceback" not in err and "internal error" not in err, err
            if code == 0:
                assert json.loads(out)["matches_plan"] is True
                continue
            assert code == 1  # its target may hold: its call landed on the other change, which it names
            line = [line for line in err.splitlines() if "kconsole" in line][-1]
            assert "changed by someone else meanwhile" in line or "changed since the plan was made" in line, err
            if "meanwhile" in line:
                assert "shardId-" in line  # the shards nobody planned are named
        if succeeded and succeeded[0] != held:  # the other change landed after the success was checked
            assert any("meanwhile" in err for _, code, _, err in runs if code == 1)
