"""--read-share: how much of each shard's GetRecords budget kconsole's own polling may take."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from console.read.share import DEFAULT_READ_SHARE, ReadShare, parse_read_share


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
    """The share given, else the default; unbounded on the embedded server or a loopback endpoint, where
    no production reader shares the budget."""
    given = getattr(args, "read_share", None)
    if given is not None:
        return ReadShare(given)
    return ReadShare(None if is_loopback(config) else DEFAULT_READ_SHARE)


def is_loopback(config: Any) -> bool:
    if config.kind == "local":
        return True
    if not config.endpoint_url:
        return False
    host = urlsplit(config.endpoint_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
