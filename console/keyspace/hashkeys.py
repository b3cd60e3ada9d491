"""The 128-bit hash-key space: MD5 of partition keys, explicit hash keys, even splits, prediction.

A partition key lands on the open shard whose closed range [StartingHashKey, EndingHashKey]
contains int(md5(key)) read big-endian; an ExplicitHashKey replaces the MD5. Open shards tile
[0, 2**128-1] exactly, so the owner of h is the shard with the smallest ending key >= h, which
`bisect_left` over the sorted ending keys finds in O(log N).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from console.errors import BadInput, TilingError

try:  # CPython's own MD5: faster than OpenSSL's on keys of up to 256 characters, and no libcrypto to load
    from _md5 import md5
except ImportError:  # a build without it (some FIPS builds leave it out)
    from hashlib import md5

HASH_SPACE = 2**128
MAX_HASH_KEY = HASH_SPACE - 1
MAX_PARTITION_KEY_CHARS = 256


def md5_hash_key(partition_key: str) -> int:
    """The hash key Kinesis derives from a partition key: MD5 of its UTF-8 bytes, as a big-endian int."""
    return int.from_bytes(md5(partition_key.encode("utf-8")).digest(), "big")


def validate_partition_key(partition_key: str) -> str:
    """AWS accepts 1 to 256 Unicode characters."""
    if not isinstance(partition_key, str) or not partition_key:
        raise BadInput("partition key must be 1 to 256 characters; got an empty key")
    if len(partition_key) > MAX_PARTITION_KEY_CHARS:
        raise BadInput(
            f"partition key must be 1 to 256 characters; got {len(partition_key)} ({partition_key[:20]!r}...)"
        )
    if not partition_key.isascii():
        check_utf8(partition_key, what="partition key")
    return partition_key


def check_utf8(text: str, *, what: str) -> str:
    """Bytes that are not UTF-8 on the command line (or a file read with surrogateescape) arrive as lone
    surrogates, which no UTF-8 encoder takes: refuse them here, as bad input, not as a traceback later."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise BadInput(f"{what} is not valid UTF-8 text: {text[:40]!r} (bad byte at position {error.start})") from None
    return text


def parse_hash_key(text: str | int, *, what: str = "explicit hash key") -> int:
    """Parse a decimal hash key (as AWS takes ExplicitHashKey) and check 0 <= h <= 2**128-1."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        raw = str(text).strip()
        # 2**128-1 has 39 digits; checking the length first also keeps huge inputs away from int(),
        # which refuses more than 4300 digits with a ValueError.
        if not raw or not raw.isascii() or not raw.isdigit() or len(raw.lstrip("0")) > 39:
            raise BadInput(f"{what} must be a decimal integer from 0 to {MAX_HASH_KEY}; got {str(text)!r}")
        value = int(raw)
    if not 0 <= value <= MAX_HASH_KEY:
        raise BadInput(f"{what} must be from 0 to {MAX_HASH_KEY} (2**128-1); got {value}")
    return value


def parse_typed_hash_key(text: str, *, what: str = "hash key") -> int:
    """A hash key as a person types it: decimal (as AWS takes it), or hex with 0x (as the console's
    hex key format shows it)."""
    raw = text.strip()
    if raw[:2].lower() != "0x":
        return parse_hash_key(raw, what=what)
    digits = raw[2:]
    # 2**128-1 is 32 hex digits; checked before int() so a huge input costs nothing.
    if not digits or len(digits.lstrip("0")) > 32 or not all(c in "0123456789abcdefABCDEF" for c in digits):
        raise BadInput(
            f"{what} must be a hexadecimal number from 0x0 to 0x{MAX_HASH_KEY:x} (or decimal); got {raw[:80]!r}"
        )
    return parse_hash_key(int(digits, 16), what=what)


def hash_key_for(partition_key: str, explicit_hash_key: int | None = None) -> int:
    """The hash key a record is routed by: the explicit one if given, else MD5 of the partition key."""
    return explicit_hash_key if explicit_hash_key is not None else md5_hash_key(partition_key)


def shard_id_for_index(index: int) -> str:
    """The id AWS gives the index-th shard of a new stream: shardId-000000000000, ..."""
    return f"shardId-{index:012d}"


def even_split(count: int) -> list[tuple[int, int]]:
    """The hash ranges AWS gives a new stream of `count` shards (and UNIFORM_SCALING targets).

    Shard i starts at i * floor(2**128 / count); the last one ends at 2**128-1.
    For 4 shards this yields exactly the ranges AWS gives a new 4-shard stream.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise BadInput(f"shard count must be a whole number of at least 1; got {count!r}")
    step = HASH_SPACE // count
    starts = [i * step for i in range(count)]
    ends = [s - 1 for s in starts[1:]] + [MAX_HASH_KEY]
    return list(zip(starts, ends))


def share_of_space(start: int, end: int) -> float:
    """The fraction of the whole key space a closed range covers."""
    return (end - start + 1) / HASH_SPACE


def check_tiling(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort ranges and check they cover [0, 2**128-1] exactly once; name the first gap or overlap."""
    ordered = sorted(ranges)
    if not ordered:
        raise TilingError("no open shards: the key space [0, 2**128-1] is not covered at all")
    expected = 0
    for start, end in ordered:
        if start > end:
            raise TilingError(f"range [{start}, {end}] starts after it ends")
        if start > expected:
            raise TilingError(f"gap in the key space: [{expected}, {start - 1}] belongs to no open shard")
        if start < expected:
            raise TilingError(
                f"overlap in the key space: [{start}, {min(end, expected - 1)}] belongs to more than one open shard"
            )
        expected = end + 1
    if expected <= MAX_HASH_KEY:
        raise TilingError(f"gap in the key space: [{expected}, {MAX_HASH_KEY}] belongs to no open shard")
    if expected > HASH_SPACE:
        raise TilingError(f"a range ends past the key space's end {MAX_HASH_KEY}")
    return ordered


class HashRangeIndex:
    """Open shards sorted by ending hash key, for O(log N) prediction.

    Build with `HashRangeIndex.build([(shard_id, start, end), ...])`; it checks the tiling. A plain
    class, not a dataclass: `kconsole predict` starts without importing dataclasses (and inspect).
    """

    __slots__ = ("endings", "starts", "shard_ids")

    def __init__(self, endings: tuple[int, ...], starts: tuple[int, ...], shard_ids: tuple[str, ...]) -> None:
        self.endings = endings
        self.starts = starts
        self.shard_ids = shard_ids

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HashRangeIndex):
            return NotImplemented
        return (self.endings, self.starts, self.shard_ids) == (other.endings, other.starts, other.shard_ids)

    def __hash__(self) -> int:
        return hash((self.endings, self.starts, self.shard_ids))

    def __repr__(self) -> str:
        return f"HashRangeIndex(shard_ids={self.shard_ids!r})"

    @classmethod
    def build(cls, shards: Iterable[tuple[str, int, int]]) -> HashRangeIndex:
        rows = sorted(shards, key=lambda row: row[1])
        check_tiling((start, end) for _, start, end in rows)
        return cls(
            endings=tuple(end for _, _, end in rows),
            starts=tuple(start for _, start, _ in rows),
            shard_ids=tuple(shard_id for shard_id, _, _ in rows),
        )

    @classmethod
    def even(cls, count: int) -> HashRangeIndex:
        return cls.build((shard_id_for_index(i), s, e) for i, (s, e) in enumerate(even_split(count)))

    def __len__(self) -> int:
        return len(self.endings)

    def index_of(self, hash_key: int) -> int:
        """Position (in key-space order) of the shard owning `hash_key`."""
        return bisect.bisect_left(self.endings, hash_key)

    def predict(self, hash_key: int) -> str:
        return self.shard_ids[bisect.bisect_left(self.endings, hash_key)]

    def predict_many(self, hash_keys: Sequence[int]) -> list[str]:
        endings, ids, find = self.endings, self.shard_ids, bisect.bisect_left
        return [ids[find(endings, h)] for h in hash_keys]


# -- bulk prediction of partition keys -----------------------------------------------------------

PREFIX_BITS = 16  # a 65,536-entry table: with 1,000 shards ~98% of its slices lie inside one shard
TABLE_WORTH_IT = 20_000  # keys; below this, building the table (~50 ms) costs more than it saves


def md5_hash_keys(partition_keys: Sequence[str]) -> list[int]:
    """md5_hash_key of each key, in one comprehension (a third faster than calling it per key)."""
    digest_of, from_bytes = md5, int.from_bytes
    return [from_bytes(digest_of(key.encode("utf-8")).digest(), "big") for key in partition_keys]


def owners_among(endings: Sequence[int], hash_keys: Sequence[int]) -> list[int]:
    """For each hash key, the position of the first of the sorted `endings` at or above it (what
    bisect_left gives, and for a shard map's endings the owning shard). For many keys the answer
    comes from a table of the top 16 bits, so only keys in a slice holding an ending are bisected."""
    find = bisect.bisect_left
    if len(hash_keys) < TABLE_WORTH_IT:
        return [find(endings, h) for h in hash_keys]
    table, shift = prefix_table(endings), 128 - PREFIX_BITS
    return [owner if (owner := table[h >> shift]) >= 0 else find(endings, h) for h in hash_keys]


def predict_hash_keys(index: HashRangeIndex, partition_keys: Sequence[str]) -> tuple[list[int], list[int]]:
    """The hash key of each partition key and the position of the shard owning it, for callers that
    show the hash keys too (`kconsole predict`)."""
    hash_keys = md5_hash_keys(partition_keys)
    return hash_keys, owners_among(index.endings, hash_keys)


def validate_partition_keys(partition_keys: Sequence[str]) -> None:
    """validate_partition_key over many keys, in bulk when they are all short ASCII (the usual case)."""
    if (
        partition_keys
        and min(map(len, partition_keys)) >= 1
        and max(map(len, partition_keys)) <= MAX_PARTITION_KEY_CHARS
        and all(map(str.isascii, partition_keys))
    ):
        return
    for key in partition_keys:
        validate_partition_key(key)


def prefix_table(endings: Sequence[int], bits: int = PREFIX_BITS) -> list[int]:
    # Callers index it with the hash key's top 16 bits (the digest's first two bytes), so `bits` stays 16 there.
    """For each slice of the key space sharing its top `bits` bits: the position of the first of the
    sorted `endings` at or above the whole slice when that one ending covers it, or -1 when an
    ending falls inside the slice.

    Built in one pass over the endings, not a search per slice: the slices between two endings'
    slices all answer the later ending, so they go in as one run (65,536 searches took ~40 ms)."""
    shift, size = 128 - bits, 1 << bits
    table: list[int] = []
    for position, ending in enumerate(endings):
        slice_ = ending >> shift
        if slice_ < len(table):  # an earlier ending already lies in this slice: decided (-1)
            continue
        table.extend([position] * (slice_ - len(table)))  # no ending inside: the first above is this one
        table.append(position if ending == ((slice_ + 1) << shift) - 1 else -1)  # covers it only at its end
    table.extend([-1] * (size - len(table)))  # above the last ending: none at or above
    return table
