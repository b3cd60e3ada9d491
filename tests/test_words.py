import re
from pathlib import Path

from console.words import counted, plain_number


def test_one_is_singular_and_the_rest_plural():
    assert [counted(n, "key") for n in (0, 1, 2, 1000)] == ["0 keys", "1 key", "2 keys", "1,000 keys"]
    assert counted(1, "open shard") == "1 open shard" and counted(3, "index", "indices") == "3 indices"


def test_numbers_are_written_without_exponents():
    assert [plain_number(n) for n in (99999999999.0, 0.25, 3.0, 1e-3)] == ["99,999,999,999", "0.25", "3", "0.001"]


COUNTED_NOUNS = (
    "records|shards|streams|keys|leases|calls|retries|children|workers|puts|splits|merges|errors|tags|results"
    "|items|entries|columns|metric points|hash keys|possible duplicates"
)
# A number written straight before a counted noun: "exported {count} records" says "1 records" (and
# "10000 shards" without the thousands separator). A bound in capitals (MAX_SHARDS) is never 1.
BARE_COUNT = re.compile(
    r"\{(?![A-Z_][A-Z0-9_]*[:}])[^{}]*\} (?:(?:open|closed|new|short-lived|sharded) )?(?:"
    + COUNTED_NOUNS
    + r")\b(?![/'\w])"
)

NOT_COUNTS = re.compile(r"\{(url|size)\} ")  # a command's address, a size ("4 MiB records")


def test_every_count_before_a_noun_goes_through_counted():
    package = Path(__file__).parent.parent / "console"
    bare = [
        f"{path.relative_to(package)}:{number}: {line.strip()}"
        for path in sorted(package.rglob("*.py"))
        if "localserver" not in path.parts  # the embedded server answers in AWS's own words
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ('f"' in line or "f'" in line) and BARE_COUNT.search(line) and not NOT_COUNTS.search(line)
    ]
    assert bare == []
