"""`kconsole plan scale` with a 1M-key sample, end to end; and how the plan grows with the shard count.

1. The command as a user runs it: `kconsole plan scale --shards 5000 --to 10000 --sample-keys F
   --json > file` (a process: start-up, reading and hashing 1M keys, the plan, which keys move and
   where, the JSON written out). Target: under 1.0 s. The baseline, also a process, is the script a
   user would write instead to count moved keys: MD5 + int of every key, bisect over the ending keys
   before and after. Both must agree on how many keys move.
2. `plan_even` (what `kconsole plan even STREAM` calls on a live stream's shards) on 2,000 uneven
   shards with the same 1M keys, including hashing the sample: the whole cost of one run.
3. Growth: plan_scale N -> 2N at 12.5k, 25k and 50k shards (no sample; 2N stays within the 100,000
   shards kconsole accepts): every step of the walk is
   linear or n log n, so doubling N should about double the time (`growth` near 2, not 4).
Prints one JSON line of figures last.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import emit, environment, fastest, kconsole_command, run_process

from console.keyspace.hashkeys import MAX_HASH_KEY, even_split, shard_id_for_index
from console.reshard.model import KeySample
from console.reshard.plan import plan_even, plan_scale
from console.topology.model import Shard

KEYS = 1_000_000
ROUNDS = 3
TARGET_SECONDS = 1.0

PLAIN_SCRIPT = """
import bisect, hashlib, json, sys
def ends(n):
    step = 2**128 // n
    return [(i + 1) * step - 1 for i in range(n - 1)] + [2**128 - 1]
before, after = ends(5000), ends(10000)
after_ranges = set(zip([0] + [e + 1 for e in after[:-1]], after))
changed = [(lo, hi) not in after_ranges for lo, hi in zip([0] + [e + 1 for e in before[:-1]], before)]
moved = 0
with open(sys.argv[1], encoding="utf-8") as keys:
    for key in keys.read().split("\\n"):
        if key:
            h = int.from_bytes(hashlib.md5(key.encode("utf-8")).digest(), "big")
            if changed[bisect.bisect_left(before, h)]:
                bisect.bisect_left(after, h)
                moved += 1
print(json.dumps({"moved": moved}))
"""


def even_stream(count: int) -> list[Shard]:
    return [Shard(shard_id_for_index(i), s, e) for i, (s, e) in enumerate(even_split(count))]


def uneven_stream(count: int, rng: random.Random) -> list[Shard]:
    cuts = sorted({rng.getrandbits(64) or 1 for _ in range(count - 1)})
    assert len(cuts) == count - 1
    starts = [0] + [c << 64 for c in cuts]
    ends = [s - 1 for s in starts[1:]] + [MAX_HASH_KEY]
    return [Shard(shard_id_for_index(i), s, e) for i, (s, e) in enumerate(zip(starts, ends))]


def timed(fn):
    started = time.process_time()
    result = fn()
    return result, time.process_time() - started


def main() -> None:
    rng = random.Random(20261122)
    keys = [f"user-{rng.getrandbits(40):x}-{i}" for i in range(KEYS)]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        keys_file = work / "keys.txt"
        keys_file.write_text("\n".join(keys) + "\n")
        script = work / "plain.py"
        script.write_text(PLAIN_SCRIPT)
        command = [
            *kconsole_command(),
            "plan",
            "scale",
            "--shards",
            "5000",
            "--to",
            "10000",
            "--sample-keys",
            str(keys_file),
            "--json",
        ]
        cli_runs, plain_runs = [], []
        for _ in range(ROUNDS):
            with (work / "plan.json").open("wb") as out:
                cli_runs.append(run_process(command, stdout=out, env=environment()))
            with (work / "plain.json").open("wb") as out:
                plain_runs.append(
                    run_process([sys.executable, str(script), str(keys_file)], stdout=out, env=environment())
                )
        cli, plain = fastest(cli_runs), fastest(plain_runs)
        moved = json.loads((work / "plan.json").read_text())["key_movement"]["moved"]
        assert moved == json.loads((work / "plain.json").read_text())["moved"], "the plan and the script disagree"

    even_before = uneven_stream(2_000, rng)
    even_plan, even_seconds = timed(lambda: plan_even(even_before, sample=KeySample.from_partition_keys(keys)))

    growth = {}
    for count in (12_500, 25_000, 50_000):
        before = even_stream(count)
        growth[count] = min(timed(lambda: plan_scale(before, 2 * count))[1] for _ in range(3))

    print(
        f"kconsole plan scale 5000 -> 10000, 1M sample keys: {cli.wall:.2f} s ({cli.cpu:.2f} s CPU); "
        f"plain md5 + bisect script: {plain.wall:.2f} s ({plain.cpu:.2f} s CPU); {moved} keys move"
    )
    print(
        f"plan_even on 2000 uneven shards with 1M keys hashed: {even_seconds:.2f} s CPU "
        f"({len(even_plan.operations)} calls)"
    )
    print("plan_scale N -> 2N: " + ", ".join(f"{n}: {s:.2f} s" for n, s in growth.items()))
    figures = {
        "benchmark": "plan",
        "path": "kconsole plan scale --shards 5000 --to 10000 --sample-keys F (1M keys) --json > file",
        "baseline": "plain script: md5 + bisect before and after per key, counting moved keys",
        "keys": KEYS,
        "cli_s": round(cli.wall, 3),
        "cli_cpu_s": round(cli.cpu, 3),
        "baseline_s": round(plain.wall, 3),
        "baseline_cpu_s": round(plain.cpu, 3),
        "ratio": round(plain.wall / cli.wall, 3),
        "even_2000_with_sample_cpu_s": round(even_seconds, 3),
        "scale_n_to_2n_cpu_s": {str(n): round(s, 3) for n, s in growth.items()},
        "growth": round((growth[50_000] / growth[12_500]) ** 0.5, 2),  # per doubling
        "target_seconds": TARGET_SECONDS,
        "within_target": cli.wall < TARGET_SECONDS,
    }
    emit(figures)


if __name__ == "__main__":
    main()
