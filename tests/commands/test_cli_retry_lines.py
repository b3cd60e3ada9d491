"""A retried call says so on stderr as kconsole, whatever else prints it: the retry line starts
with `kconsole:`, and a program that turns Python's logging on sees the record under a `kconsole.`
logger, never a bare `console` that names no command the user knows."""

from __future__ import annotations

import asyncio
import re
import sys
from urllib.parse import urlsplit

from tests.faultproxy import FaultProxy, Faults

# The CLI as a script that also configures logging (as an embedding program or a library may):
# the backend's retry records then reach stderr with their logger's name.
WITH_LOGGING = "import logging, sys; logging.basicConfig(level=logging.INFO); from console import cli; sys.exit(cli.main(sys.argv[1:]))"


async def test_a_retry_line_is_prefixed_kconsole(local_kinesis, make_stream):
    stream = await make_stream(shards=2)
    throttled_twice = Faults(throttle=1.0, operations=frozenset({"ListShards"}), limit=2)
    async with FaultProxy(urlsplit(local_kinesis.endpoint_url).port, throttled_twice) as proxy:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WITH_LOGGING,
            "shards",
            stream,
            "--endpoint-url",
            proxy.endpoint_url,
            "--region",
            "us-east-1",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _out, err = await asyncio.wait_for(process.communicate(), 60)
    text = err.decode()
    assert process.returncode == 0, text
    retries = [line for line in text.splitlines() if "retry" in line]
    assert any(line.startswith("kconsole: throttled on ListShards") for line in retries), text
    assert [line for line in retries if re.search(r"(?<![k\w])console[.:]", line)] == [], text
