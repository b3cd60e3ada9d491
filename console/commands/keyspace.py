"""The key-space what-ifs: `kconsole predict`, `kconsole keytree`, `kconsole spread`.

All three work offline against the even split AWS gives a new N-shard stream (`--shards N`,
default 4). `predict` and `spread` can instead use a live stream's open shards (`--stream NAME`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from console.bounds import read_text_lines, shard_count, whole_number
from console.commands import Parents, Subparsers, command_help
from console.commands._options import options_from
from console.commands._output import emit, emit_json_with_rows, plain_json, render_table, run_async
from console.errors import BadInput, TilingError
from console.keyspace.distribution import Distribution, count_indices, format_distribution, summarize
from console.keyspace.hashkeys import (
    HASH_SPACE,
    HashRangeIndex,
    parse_hash_key,
    predict_hash_keys,
    share_of_space,
    validate_partition_keys,
)
from console.words import counted

if TYPE_CHECKING:
    from console.keyspace.keytree.balance import BalanceReport
    from console.keyspace.writesharding import Spread

DEFAULT_SHARDS = 4  # what `kconsole --local` creates, and AWS's 4-shard example
MAX_TREE_KEYS = 1_000_000
MAX_ROWS = 50  # text tables longer than this show their head and say how many were left out


def register(subparsers: Subparsers, common: Parents) -> None:
    predict = subparsers.add_parser(
        "predict",
        parents=common,
        help=command_help("predict"),
        description="Predict the shard of each partition key: MD5 of the key as a 128-bit big-endian "
        f"integer, against an even split of N shards (--shards, default {DEFAULT_SHARDS}) "
        "or a live stream's open shards (--stream). With two or more keys it also shows "
        "how they spread over the shards.",
    )
    predict.add_argument("keys", nargs="*", metavar="KEY", help="partition keys (1 to 256 characters)")
    predict.add_argument(
        "--keys-file", metavar="F", help="more keys, one per line ('-' reads stdin; blank lines skipped)"
    )
    predict.add_argument(
        "--explicit-hash-key",
        metavar="H",
        help="a decimal ExplicitHashKey (0 .. 2**128-1) that overrides the keys' MD5, as in PutRecord",
    )
    _add_shard_source(predict, with_stream=True)
    predict.set_defaults(handler=predict_command)

    keytree = subparsers.add_parser(
        "keytree",
        parents=common,
        help=command_help("keytree"),
        description="Hand out explicit hash keys that keep the key space balanced (the balanced key tree): "
        "2**127, 2**126, 3*2**126, ... from an empty space, or, after the keys already in use "
        "(--existing-file), the keys that restore balance first. Prints the keys and a balance "
        "report: keys per tree depth and the worst left/right imbalance.",
    )
    keytree.add_argument("--count", default="1", metavar="N", help="how many next keys to hand out (default 1)")
    keytree.add_argument(
        "--existing-file",
        metavar="F",
        help="keys already in use, decimal, one per line ('-' reads stdin; blank lines and # comments skipped)",
    )
    keytree.add_argument(
        "--space",
        default=str(HASH_SPACE),
        metavar="SIZE",
        help="size of the key space, a power of two (default 2**128, Kinesis'; 128 replays the reference algorithm's small example)",
    )
    keytree.set_defaults(handler=keytree_command)

    spread = subparsers.add_parser(
        "spread",
        parents=common,
        help=command_help("spread"),
        description="Write sharding: each record of hot partition key PK gets the suffix "
        "xxh64('PK:SK') & (n-1) and is written under 'PK:suffix'. Shows the shard each of "
        "the n sharded keys lands on and, given sort keys, how evenly they spread over the "
        "suffixes and the shards.",
    )
    spread.add_argument("partition_key", metavar="PK", help="the hot partition key")
    sort_keys = spread.add_mutually_exclusive_group()
    sort_keys.add_argument("--sort-key", action="append", default=[], metavar="SK", help="a sort key (repeatable)")
    sort_keys.add_argument("--sort-keys-file", metavar="F", help="sort keys, one per line ('-' reads stdin)")
    spread.add_argument("--suffixes", required=True, metavar="N", help="how many suffixes: a power of two")
    _add_shard_source(spread, with_stream=True)
    spread.set_defaults(handler=spread_command)


def _add_shard_source(parser: argparse.ArgumentParser, *, with_stream: bool) -> None:
    # SUPPRESS keeps a value given before the command name (`kconsole --stream s predict k`).
    parser.add_argument(
        "--shards",
        default=argparse.SUPPRESS,
        metavar="N",
        help=f"predict against the even split of a new N-shard stream (default {DEFAULT_SHARDS}); "
        "with --local --stream, the shard count the stream is created with",
    )
    if with_stream:
        parser.add_argument(
            "--stream",
            default=argparse.SUPPRESS,
            metavar="NAME",
            help="predict against this live stream's open shards instead",
        )


# -- where the shards come from ------------------------------------------------------------------------


class ShardSet:
    """The shards to predict against. (This module's classes are plain, not dataclasses: `kconsole
    predict` starts without importing dataclasses and inspect.)"""

    __slots__ = ("index", "source", "lineage", "auto_notice")

    def __init__(
        self, index: HashRangeIndex, source: dict[str, Any], lineage: Any = None, auto_notice: str | None = None
    ) -> None:
        self.index = index
        self.source = source  # {"shards": N} or {"stream": NAME, "backend": label}
        self.lineage = (
            lineage  # console.topology.lineage.Lineage for a live stream: answers "which shard before the reshard"
        )
        # A live stream with AUTO record distribution: Kinesis ignores the keys, so nothing is predicted.
        self.auto_notice = auto_notice

    def describe(self) -> str:
        if "stream" in self.source:
            return (
                f"stream {self.source['stream']} ({counted(len(self.index), 'open shard')}, {self.source['backend']})"
            )
        return f"an even split of {counted(len(self.index), 'shard')}"


def parse_shard_count(value: object, *, option: str = "--shards") -> int:
    return shard_count(value, what=option)


def _decimal(text: str, max_digits: int) -> int | None:
    """`text` as a non-negative int, or None if it is not plain ASCII digits. Past `max_digits` it
    only says "too big" (-1 marks that): int() refuses strings of over 4300 digits with a traceback."""
    if not text.isascii() or not text.isdigit():
        return None
    return int(text) if len(text.lstrip("0")) <= max_digits else -1


def resolve_shard_set(args: argparse.Namespace, shards: object, stream: str | None) -> ShardSet:
    """The even split of --shards N, or --stream NAME's open shards."""
    count = None if shards is None else parse_shard_count(shards)
    if count is not None and stream is not None and not getattr(args, "local", False):
        raise BadInput("give --shards N or --stream NAME, not both", code="usage")
    if stream is not None:
        # With --local both make sense together: the stream is created on the empty server with N shards.
        return run_async(_load_stream_shards(args, stream, count))
    count = DEFAULT_SHARDS if count is None else count
    return ShardSet(index=HashRangeIndex.even(count), source={"shards": count})


async def _load_stream_shards(args: argparse.Namespace, stream: str, count: int | None) -> ShardSet:
    from console.commands._backend import with_backend
    from console.commands._distribution import distribution_since
    from console.commands._stream_args import validate_stream_name
    from console.topology.lineage import Lineage
    from console.topology.model import auto_notice

    validate_stream_name(stream)
    async with with_backend(args, stream=stream, shards=count) as kinesis:
        summary = await kinesis.describe_stream_summary(stream)
        shards = await kinesis.all_shards(stream)
        label = kinesis.label
        notice = auto_notice(stream, await distribution_since(kinesis, stream)) if summary.auto_distribution else None
    lineage = Lineage.build(shards)
    if lineage.open_index is None:
        raise TilingError(f"stream {stream}: {lineage.problem}")
    return ShardSet(
        index=lineage.open_index, source={"stream": stream, "backend": label}, lineage=lineage, auto_notice=notice
    )


def emit_auto_placement(args: argparse.Namespace, shard_set: ShardSet, keys: list[str | None]) -> int:
    """On an AUTO stream no key has a shard: say so, and give each key `"placement": "auto"`."""
    document = {
        "source": shard_set.source,
        "placement": "auto",
        "notice": shard_set.auto_notice,
        "keys": [{"key": key, "placement": "auto", "shard_id": None} for key in keys],
    }
    emit(
        args,
        document,
        lambda: (
            f"{shard_set.auto_notice}\n{len(keys)} key(s): placement auto (the service "
            "chooses the shard per record); predict with --shards N for a what-if"
        ),
    )
    return 0


def read_lines(path: str, *, what: str) -> list[str]:
    """Lines of a file ('-' = stdin) without their line endings, read within console.bounds' caps;
    a file we cannot read, or one beyond them, is bad input."""
    return read_text_lines(path, what=what)


def shard_distribution(index: HashRangeIndex, shard_indices: Iterable[int]) -> Distribution:
    return summarize(
        index.shard_ids,
        count_indices(shard_indices, len(index)),
        [share_of_space(s, e) for s, e in zip(index.starts, index.endings)],
    )


# -- kconsole predict ------------------------------------------------------------------------------------


# The keyspace commands' options are NamedTuples: these commands start in a few times `python -c pass`,
# and a dataclass would import `inspect` (~9 ms) before the first key is hashed.


class PredictOptions(NamedTuple):
    # --shards N (an even split; unparsed: checked where it is used) or --stream NAME (its open shards)
    shards: object = None
    stream: str | None = None
    keys: Sequence[str] = ()
    keys_file: str | None = None
    explicit_hash_key: str | None = None


def predict_command(args: argparse.Namespace) -> int:
    options = options_from(PredictOptions, args)
    keys: list[str | None] = list(options.keys)
    if options.keys_file:
        from_file = [line for line in read_lines(options.keys_file, what="keys file") if line.strip()]
        if not from_file:
            raise BadInput(f"keys file {options.keys_file!r} holds no keys (one per line; blank lines are skipped)")
        keys += from_file
    explicit = None
    if options.explicit_hash_key is not None:
        if len(options.explicit_hash_key) > 60:  # parse_hash_key's int() would refuse a 4300-digit string
            raise BadInput(f"--explicit-hash-key must be from 0 to 2**128-1; got {options.explicit_hash_key[:40]!r}...")
        explicit = parse_hash_key(options.explicit_hash_key, what="--explicit-hash-key")
        if not keys:
            keys = [None]  # the hash key alone still says where a record would land
    if not keys:
        raise BadInput("give at least one KEY (or --keys-file F, or --explicit-hash-key H)", code="usage")
    validate_partition_keys([key for key in keys if key is not None])

    shard_set = resolve_shard_set(args, options.shards, options.stream)
    if shard_set.auto_notice:
        return emit_auto_placement(args, shard_set, keys)
    index = shard_set.index
    if explicit is not None:
        hash_keys = [explicit] * len(keys)
        positions = [index.index_of(explicit)] * len(keys)
    else:
        hash_keys, positions = predict_hash_keys(index, keys)  # type: ignore[arg-type]  # no None key without a hash key
    predictions = Predictions(keys, hash_keys, positions, index, shard_set.lineage)
    distribution = shard_distribution(index, positions)
    document = {
        "source": shard_set.source,
        "explicit_hash_key": None if explicit is None else str(explicit),
        "keys": None,
        "distribution": distribution.to_json(),
    }
    if plain_json(args):
        emit_json_with_rows(document, "keys", predictions.encoded_chunks())
        return 0
    if getattr(args, "output", None) is not None:  # --output text/table, --query, --max-items: the whole document
        import json

        document["keys"] = json.loads("[" + ", ".join(predictions.encoded_chunks()) + "]")
    emit(args, document, lambda: format_predictions(predictions, distribution, shard_set))
    return 0


class Predictions:
    """Where each key lands, kept as parallel lists: the rows are only made for what is printed (the
    head of the text table), and --json encodes them straight from the lists, chunk by chunk."""

    __slots__ = ("keys", "hash_keys", "positions", "index", "lineage")
    CHUNK = 10_000  # rows per write of --json output

    def __init__(
        self,
        keys: list[str | None],
        hash_keys: list[int],
        positions: list[int],
        index: HashRangeIndex,
        lineage: Any = None,
    ) -> None:
        self.keys = keys
        self.hash_keys = hash_keys
        self.positions = positions
        self.index = index
        self.lineage = lineage

    def __len__(self) -> int:
        return len(self.keys)

    def rows(self, stop: int) -> list[dict[str, Any]]:
        """The first `stop` rows, as --json prints them."""
        ids = self.index.shard_ids
        rows = [
            {"key": key, "hash_key": str(hash_key), "shard_id": ids[position], "shard_index": position}
            for key, hash_key, position in zip(self.keys[:stop], self.hash_keys[:stop], self.positions[:stop])
        ]
        if self.lineage is not None:
            for row, hash_key in zip(rows, self.hash_keys):
                row["previous_shard_id"] = self.lineage.owner_before(hash_key).previous
        return rows

    def encoded_chunks(self) -> Iterator[str]:
        """The rows as JSON objects (what json.dumps makes of rows()), comma-joined CHUNK at a time."""
        import json
        from json.encoder import encode_basestring_ascii as encode

        ids = [encode(shard_id) for shard_id in self.index.shard_ids]
        for first in range(0, len(self.keys), self.CHUNK):
            window = slice(first, first + self.CHUNK)
            keys, hash_keys, positions = self.keys[window], self.hash_keys[window], self.positions[window]
            if self.lineage is None:
                yield ", ".join(
                    f'{{"key": {"null" if key is None else encode(key)}, "hash_key": "{hash_key}", '
                    f'"shard_id": {ids[position]}, "shard_index": {position}}}'
                    for key, hash_key, position in zip(keys, hash_keys, positions)
                )
            else:
                yield ", ".join(
                    json.dumps(row)
                    for row in Predictions(keys, hash_keys, positions, self.index, self.lineage).rows(len(keys))
                )


def format_predictions(predictions: Predictions, distribution: Distribution, shard_set: ShardSet) -> str:
    with_previous = shard_set.lineage is not None
    header = ["KEY", "HASH KEY", "SHARD", "#"] + (["BEFORE LAST RESHARD"] if with_previous else [])
    table = [
        [row["key"] if row["key"] is not None else "-", row["hash_key"], row["shard_id"], str(row["shard_index"])]
        + ([row["previous_shard_id"] or "-"] if with_previous else [])
        for row in predictions.rows(MAX_ROWS)
    ]
    lines = [
        f"against {shard_set.describe()}:",
        render_table(header, table, right_aligned={3}, max_rows=MAX_ROWS, total_rows=len(predictions)),
    ]
    if len(predictions) > 1:
        lines += ["", format_distribution(distribution, noun="keys", bucket_noun="shards")]
    return "\n".join(lines)


# -- kconsole keytree ------------------------------------------------------------------------------------


class KeytreeOptions(NamedTuple):
    # argparse's dest, which shadows tuple.count (never called on options)
    count: str = "1"  # type: ignore[assignment]  # checked: whole_number
    existing_file: str | None = None
    space: str = str(HASH_SPACE)  # checked: _parse_space


def keytree_command(args: argparse.Namespace) -> int:
    from console.keyspace.keytree.tree import KeyTree

    options = options_from(KeytreeOptions, args)
    space = _parse_space(options.space)
    count = whole_number(options.count, what="--count", low=0, high=MAX_TREE_KEYS)
    listed = read_existing_keys(options.existing_file, space) if options.existing_file else []
    existing = len(set(listed))  # the tree holds a repeated key once; say so rather than count it twice
    tree = KeyTree.rehydrate(listed, ceil=space)
    keys = tree.next_keys(count)
    report = tree.balance()
    document = {
        "space": str(space),
        "existing": existing,
        "duplicates": len(listed) - existing,
        "keys": [str(k) for k in keys],
        "balance": report.to_json(),
    }
    emit(args, document, lambda: format_keytree(keys, report, space, existing, len(listed) - existing))
    return 0


def _parse_space(value: object) -> int:
    """A power of two from 2 to 2**128, written out or as 2**k."""
    text = str(value).strip().replace("_", "")
    exponent = _decimal(text[3:], 3) if text.startswith("2**") else None
    size = 2**exponent if exponent is not None and 1 <= exponent <= 128 else _decimal(text, 39)
    if size is None or size < 2 or size > HASH_SPACE or size & (size - 1):
        shown = str(value) if len(str(value)) <= 40 else str(value)[:40] + "..."
        raise BadInput(f"--space must be a power of two from 2 to 2**128; got {shown!r}", code="usage")
    return size


def read_existing_keys(path: str, space: int) -> list[int]:
    keys = []
    source = "stdin" if path == "-" else path
    for number, line in enumerate(read_lines(path, what="existing-keys file"), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        key = _decimal(text, 39)  # 2**128 has 39 digits
        if key is None:
            raise BadInput(f"{source} line {number}: {text[:40]!r} is not a decimal hash key")
        if key < 0 or key >= space:  # -1: too many digits to be a key at all
            shown = str(key) if key >= 0 else f"{text[:40]}..."
            raise BadInput(f"{source} line {number}: key {shown} is outside the key space [0, {space - 1}]")
        keys.append(key)
    return keys


def format_keytree(keys: list[int], report: BalanceReport, space: int, existing: int, duplicates: int = 0) -> str:
    space_text = "2**128" if space == HASH_SPACE else str(space)
    repeated = f" ({duplicates} repeated line{'s' if duplicates != 1 else ''} counted once)" if duplicates else ""
    lines = [
        f"{len(keys)} next balanced key{'s' if len(keys) != 1 else ''} in [0, {space_text})"
        + (f" after {existing} existing{repeated}" if existing else "")
        + ":"
    ]
    shown = keys if len(keys) <= MAX_ROWS * 20 else keys[: MAX_ROWS * 20]
    lines += [str(k) for k in shown]
    if len(shown) < len(keys):
        lines.append(f"... {len(keys) - len(shown)} more (use --json for all)")
    lines += ["", f"balance of all {counted(report.total_keys, 'key')} (depths without keys left out):"]
    table = [[str(lv.depth), str(lv.keys), str(lv.capacity), f"{lv.fill:.1%}"] for lv in report.levels if lv.keys]
    lines.append(
        render_table(["DEPTH", "KEYS", "CAPACITY", "FILL"], table, right_aligned={0, 1, 2, 3}, max_rows=MAX_ROWS)
    )
    worst = report.worst
    if worst is None:
        lines.append("worst imbalance: none (no keys)")
    else:
        lines.append(
            f"worst imbalance: under {worst.key} (depth {worst.depth}): "
            f"left {worst.left}, right {worst.right} (difference {worst.difference})"
        )
    return "\n".join(lines)


# -- kconsole spread -------------------------------------------------------------------------------------


class SpreadOptions(NamedTuple):
    shards: object = None  # as predict's
    stream: str | None = None
    partition_key: str = ""
    suffixes: str = ""  # checked: a power of two
    sort_key: Sequence[str] = ()
    sort_keys_file: str | None = None


def spread_command(args: argparse.Namespace) -> int:
    from console.keyspace.writesharding import MAX_SUFFIXES, check_suffix_count, spread

    options = options_from(SpreadOptions, args)
    suffixes = check_suffix_count(whole_number(options.suffixes, what="--suffixes", low=1, high=MAX_SUFFIXES))
    sort_keys = list(options.sort_key)
    if options.sort_keys_file:
        sort_keys = [line for line in read_lines(options.sort_keys_file, what="sort-keys file") if line.strip()]
        if not sort_keys:
            raise BadInput(
                f"sort-keys file {options.sort_keys_file!r} holds no sort keys (one per line; blank lines are skipped)"
            )
    shard_set = resolve_shard_set(args, options.shards, options.stream)
    if shard_set.auto_notice:
        return emit_auto_placement(args, shard_set, [f"{options.partition_key}:{n}" for n in range(suffixes)])
    result = spread(options.partition_key, suffixes, shard_set.index, sort_keys)
    document = {"source": shard_set.source, **result.to_json()}
    emit(args, document, lambda: format_spread(result, shard_set))
    return 0


def format_spread(result: Spread, shard_set: ShardSet) -> str:
    lines = [
        f"hot key {result.partition_key!r} split {result.suffix_count} ways against {shard_set.describe()}: "
        f"the sharded keys reach {result.shards_reached} of {counted(len(shard_set.index), 'shard')}",
        "",
    ]
    suffix_rows = [
        [str(s.suffix), s.partition_key, s.shard_id, str(s.shard_index), str(s.sort_keys)] for s in result.suffixes
    ]
    lines.append(
        render_table(
            ["SUFFIX", "PARTITION KEY", "SHARD", "#", "SORT KEYS"],
            suffix_rows,
            right_aligned={0, 3, 4},
            max_rows=MAX_ROWS,
        )
    )
    lines += [
        "",
        "sharded keys per shard:",
        format_distribution(result.suffixes_by_shard, noun="suffixes", bucket_noun="shards"),
    ]
    if result.sort_keys:
        sort_rows = [[p.sort_key, str(p.suffix), p.partition_key, p.shard_id] for p in result.sort_keys]
        lines += [
            "",
            render_table(
                ["SORT KEY", "SUFFIX", "PARTITION KEY", "SHARD"], sort_rows, right_aligned={1}, max_rows=MAX_ROWS
            ),
            "",
            "sort keys per suffix:",
            format_distribution(result.by_suffix, noun="sort keys", bucket_noun="suffixes"),
            "",
            "sort keys per shard:",
            format_distribution(result.by_shard, noun="sort keys", bucket_noun="shards"),
        ]
    return "\n".join(lines)
