"""`open_backend(..., wait_for_server=False)`, as the console opens `--local`: the backend comes before the
embedded server answers (the screen is built meanwhile), and its calls wait for the server, not fail."""

from __future__ import annotations

import asyncio

import pytest

from console.backend import BackendConfig, open_backend

pytestmark = pytest.mark.timeout(90)


def test_calls_made_while_the_server_boots_wait_for_it():
    async def main() -> tuple[bool, list[str]]:
        async with open_backend(BackendConfig(kind="local"), wait_for_server=False) as kinesis:
            booting = not kinesis.server_ready.done()
            await kinesis.ensure_stream("early", 1)  # without the wait: connection refused, said as an error
            return booting, await kinesis.stream_names()

    booting, names = asyncio.run(main())
    assert booting
    assert names == ["early"]
