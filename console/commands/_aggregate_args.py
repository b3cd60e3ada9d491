"""`--aggregate [--max-aggregate-bytes N]` for the commands that write (`produce`, `put`): KPL
aggregation through console.produce.aggregate, its size bounded before anything is sent."""

from __future__ import annotations

from typing import Any

from console.errors import BadInput
from console.produce.aggregate import (
    DEFAULT_MAX_AGGREGATE_BYTES,
    MAX_RECORD_LIMIT,
    MIN_AGGREGATE_BYTES,
    check_max_aggregate_bytes,
)


def add_aggregate_options(parser: Any) -> None:
    parser.add_argument(
        "--aggregate",
        action="store_true",
        help="pack the records into KPL aggregated records (AWS's format, read by KCL, Lambda and "
        "aws-kinesis-agg), grouped by predicted shard; one aggregate in flight per key",
    )
    parser.add_argument(
        "--max-aggregate-bytes",
        type=_whole_bytes,
        default=None,
        metavar="N",
        help=f"with --aggregate: the largest aggregate, data plus key (default "
        f"{DEFAULT_MAX_AGGREGATE_BYTES:,}, as KPL; at least {MIN_AGGREGATE_BYTES:,}, at most the "
        "stream's record size limit)",
    )


def _whole_bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise BadInput(f"--max-aggregate-bytes must be a whole number of bytes; got {text!r}") from None
    # No stream allows more; the stream's own limit is checked once it is known.
    return check_max_aggregate_bytes(value, MAX_RECORD_LIMIT, "the largest record size any stream allows")


def aggregate_bytes(args: Any) -> int | None:
    """The aggregate size the command asked for (None: no aggregation); BadInput for a size without
    --aggregate, or for a mode that cannot aggregate."""
    if args.max_aggregate_bytes is not None and not args.aggregate:
        raise BadInput("--max-aggregate-bytes sizes KPL aggregates: add --aggregate")
    if not args.aggregate:
        return None
    if getattr(args, "mode", "batch") != "batch":
        raise BadInput("--aggregate sends PutRecords requests: use --mode batch")
    return args.max_aggregate_bytes or DEFAULT_MAX_AGGREGATE_BYTES


def check_aggregate_fits_stream(max_aggregate_bytes: int | None, summary: Any) -> None:
    """An aggregate must fit the stream's own record size limit (MaxRecordSizeInKiB; 1 MiB unless raised)."""
    if max_aggregate_bytes is not None:
        check_max_aggregate_bytes(max_aggregate_bytes, summary.max_record_bytes)
