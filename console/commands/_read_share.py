"""--read-share: how much of each shard's GetRecords budget kconsole's own polling may take."""

from __future__ import annotations

from typing import Any

from console.read.share import DEFAULT_READ_SHARE, ReadShare, parse_read_share, share_for_endpoint


def add_read_share_argument(parser: Any) -> None:
    parser.add_argument(
        "--read-share",
        type=parse_read_share,
        metavar="FRACTION",
        help=f"the most of each shard's 5 GetRecords/s and 2 MiB/s kconsole's polling takes (default "
        f"{DEFAULT_READ_SHARE:g}, leaving the stream's readers the rest; unbounded with --local or a "
        "loopback endpoint); halved while readers are throttled",
    )


def read_share_for(args: Any, config: Any) -> ReadShare:
    """The share given, else the default (unbounded on the embedded server or a loopback endpoint)."""
    given = getattr(args, "read_share", None)
    return ReadShare(share_for_endpoint(given, local=config.kind == "local", endpoint_url=config.endpoint_url))
