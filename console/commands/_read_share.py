"""--read-share: how much of each shard's GetRecords budget kconsole's own polling may take, and what a
following read (`tail --follow`) says and does about throttles: a line each time it starts backing off,
the stream's own read throttles followed once a minute, the call path's retry lines held back while the
reader already says which shards it cannot reach."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from console.commands._output import note
from console.errors import ConsoleError
from console.read.share import DEFAULT_READ_SHARE, ReadShare, parse_read_share, share_for_endpoint

if TYPE_CHECKING:
    from console.backend.config import BackendConfig
    from console.backend.protocol import BackendConnection, MetricsBackend
    from console.read.tail import TailReader

STREAM_THROTTLES_EVERY = 60.0  # seconds between readings of the stream's read throttles (CloudWatch's period)


def add_read_share_argument(parser: Any) -> None:
    parser.add_argument(
        "--read-share",
        type=parse_read_share,
        metavar="FRACTION",
        help=f"the most of each shard's 5 GetRecords/s and 2 MiB/s kconsole's polling takes (default "
        f"{DEFAULT_READ_SHARE:g}, leaving the stream's readers the rest; unbounded with --local or a "
        "loopback endpoint); halved while readers are throttled",
    )


def read_share_for(args: argparse.Namespace, config: BackendConfig) -> ReadShare:
    """The share given, else the default (unbounded on the embedded server or a loopback endpoint)."""
    given = getattr(args, "read_share", None)
    return ReadShare(share_for_endpoint(given, local=config.kind == "local", endpoint_url=config.endpoint_url))


class BackOffLines:
    """Called after every page: one line each time the reading starts backing off (throttled, it reads
    less and offers EFO), none while it goes on or once it recovers."""

    def __init__(self, read_share: ReadShare, command: str) -> None:
        self.read_share = read_share
        self.command = command
        self._backing_off = False

    def __call__(self) -> None:
        if self.read_share.backing_off != self._backing_off:
            self._backing_off = self.read_share.backing_off
            if self._backing_off:
                note(f"{self.command}: {self.read_share.summary()}")


async def follow_stream_throttles(kinesis: MetricsBackend, stream: str, back_off: BackOffLines) -> None:
    """The stream's ReadProvisionedThroughputExceeded once a minute (CloudWatch's resolution): readers
    refused while kconsole polls make it read less (ReadShare.stream_throttled). Runs until cancelled."""
    from console.heat.capacity import RECENT_MINUTES, stream_metrics, unavailable_reason

    while True:
        try:
            metrics = await stream_metrics(kinesis, stream, minutes=RECENT_MINUTES)
        except ConsoleError as error:
            note(
                f"{back_off.command}: the stream's read throttles are not followed ({unavailable_reason(error)}); "
                "kconsole backs off on its own throttles only"
            )
            return
        back_off.read_share.stream_throttled(metrics.latest("ReadProvisionedThroughputExceeded"))
        back_off()  # the shards may be quiet: no page would say it
        await asyncio.sleep(STREAM_THROTTLES_EVERY)


def hold_back_retry_lines_while_unreachable(kinesis: BackendConnection, reader: TailReader) -> None:
    """A following reader says which shards it cannot read at once and then once a minute; the call
    path's retry lines (up to one a second, for as long as the outage lasts) would say it again between,
    so they are held back while any shard is unreachable. Before that, and once it reads again, they show."""
    say = kinesis.on_retry
    if say is None:
        return

    def retry_line(event: Any) -> None:
        if not reader.unreachable:
            say(event)

    kinesis.on_retry = retry_line
