"""`kconsole predict --keys-file` end to end: 1M partition keys over 1,000 shards, --json to a file.

The user's path is the command itself, run as a user runs it (a process: start-up, reading the
file, MD5 and the owner of every key, the JSON document written to a file). The baseline is the
script a user would write instead, also run as a process: read the file, MD5 + bisect per key, rows
as dicts, one json.dumps (the C encoder) and one write. Both print the same rows; the benchmark checks
that they agree. Also measured: the same command with PYTHONUNBUFFERED=1 (output must stay as fast)
and in text mode (which prints 50 rows and the distribution, so must not build the other rows).

    python tests/benchmarks/bench_predict.py     # last line: one JSON document with `ratio`
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import best_of, emit, environment, fastest, kconsole_command, run_process

KEYS = 1_000_000
SHARDS = 1_000
ROUNDS = 3
TARGET_RATIO = 0.9

PLAIN_SCRIPT = """
import bisect, hashlib, json, sys
step = 2**128 // {shards}
endings = [(i + 1) * step - 1 for i in range({shards} - 1)] + [2**128 - 1]
ids = [f"shardId-{{i:012d}}" for i in range({shards})]
rows = []
with open(sys.argv[1], encoding="utf-8") as keys:
    for key in keys.read().splitlines():
        if key.strip():
            h = int.from_bytes(hashlib.md5(key.encode("utf-8")).digest(), "big")
            i = bisect.bisect_left(endings, h)
            rows.append({{"key": key, "hash_key": str(h), "shard_id": ids[i], "shard_index": i}})
sys.stdout.write(json.dumps({{"keys": rows}}) + "\\n")
"""


def main() -> None:
    rng = random.Random(20181222)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        keys_file = work / "keys.txt"
        keys_file.write_text("".join(f"user-{rng.getrandbits(64):016x}\n" for _ in range(KEYS)))
        script = work / "plain.py"
        script.write_text(PLAIN_SCRIPT.format(shards=SHARDS))
        command = [*kconsole_command(), "predict", "--keys-file", str(keys_file), "--shards", str(SHARDS)]
        outputs = {name: work / f"{name}.out" for name in ("plain", "json", "unbuffered", "text")}

        def to_file(name, argv, **env):
            with outputs[name].open("wb") as out:
                return run_process(argv, stdout=out, env=environment(**env))

        # Rounds interleave the two sides so a busy moment hits both alike; best of each.
        plain_runs, json_runs = [], []
        for _ in range(ROUNDS):
            plain_runs.append(to_file("plain", [sys.executable, str(script), str(keys_file)]))
            json_runs.append(to_file("json", [*command, "--json"]))
        plain, json_run = fastest(plain_runs), fastest(json_runs)
        unbuffered = best_of(ROUNDS, lambda: to_file("unbuffered", [*command, "--json"], PYTHONUNBUFFERED="1"))
        text = best_of(ROUNDS, lambda: to_file("text", command))

        ours = json.loads(outputs["json"].read_text())["keys"]
        theirs = json.loads(outputs["plain"].read_text())["keys"]
        assert ours == theirs, "kconsole predict and the plain script disagree"
        assert outputs["unbuffered"].read_bytes() == outputs["json"].read_bytes()
        assert len(outputs["text"].read_text().splitlines()) < 200  # 50 rows and the distribution summary

    figures = {
        "benchmark": "predict",
        "path": "kconsole predict --keys-file F --shards 1000 --json > file",
        "baseline": "plain script: md5 + bisect per key, json.dumps of the rows",
        "keys": KEYS,
        "shards": SHARDS,
        "kconsole_s": round(json_run.wall, 3),
        "kconsole_cpu_s": round(json_run.cpu, 3),
        "baseline_s": round(plain.wall, 3),
        "baseline_cpu_s": round(plain.cpu, 3),
        "ratio": round(plain.wall / json_run.wall, 3),
        "unbuffered_s": round(unbuffered.wall, 3),
        "unbuffered_ratio": round(plain.wall / unbuffered.wall, 3),
        "text_mode_s": round(text.wall, 3),
        "target_ratio": TARGET_RATIO,
    }
    print(
        f"kconsole predict --json: {json_run.wall:.2f} s; plain md5+bisect script: {plain.wall:.2f} s; "
        f"PYTHONUNBUFFERED=1: {unbuffered.wall:.2f} s; text mode: {text.wall:.2f} s"
    )
    emit(figures)


if __name__ == "__main__":
    main()
