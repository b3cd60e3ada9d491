"""`kconsole streams` on 200 streams against `aws kinesis list-streams` on the same server.

Both are fresh processes against `kconsole local serve` holding 200 streams. The AWS CLI (v1, in the
cached venv bench_startup makes) pages ListStreams to the end and prints names, statuses and modes
(StreamSummaries); kconsole makes the same page-through, then one DescribeStreamSummary per stream,
DESCRIBE_CONCURRENCY at once, for the open shards, retention, encryption and distribution it shows —
the whole cost of what a user sees. `streams_names_s` is kconsole with a --query that needs no
describe (the listing alone, the AWS CLI's own work). Target: streams_ratio <= 1.5 (a table of
what the AWS CLI cannot show at all). Best of ROUNDS, interleaved. One JSON line of figures last.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import aws_environment, fastest, kconsole_command, local_serve, run_process  # noqa: E402
from bench_startup import aws_cli  # noqa: E402

ROUNDS = 5
STREAMS = 200


async def create_streams(endpoint: str) -> None:
    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
        gate = asyncio.Semaphore(16)

        async def create(index: int) -> None:
            async with gate:
                await kinesis.create_stream(f"bench-{index:03d}", 1)

        await asyncio.gather(*(create(index) for index in range(STREAMS)))
        for index in range(STREAMS):
            await kinesis.wait_for_active(f"bench-{index:03d}")


def main() -> None:
    env = aws_environment()
    aws = aws_cli()
    with local_serve() as endpoint:
        asyncio.run(create_streams(endpoint))
        common = ["--endpoint-url", endpoint, "--region", "us-east-1"]
        commands = {
            "streams": kconsole_command() + ["streams", *common],
            "streams_names": kconsole_command() + ["streams", *common, "--query", "[].name"],
        }
        if aws is not None:
            commands["aws_list_streams"] = [aws, "kinesis", "list-streams", *common]
        listed = subprocess.run(commands["streams"] + ["--json"], capture_output=True, env=env, check=True)
        assert len(json.loads(listed.stdout)) == STREAMS, "kconsole streams did not list every stream"
        runs: dict[str, list] = {name: [] for name in commands}
        for _ in range(ROUNDS):
            for name, argv in commands.items():
                runs[name].append(run_process(argv, env=env))
    best = {name: fastest(found).wall for name, found in runs.items()}
    figures = {
        "benchmark": "streams",
        "path": f"fresh `kconsole streams --endpoint-url URL` on {STREAMS} streams (one ListStreams page-through, "
        "one DescribeStreamSummary per stream, concurrently)",
        "baseline": "aws kinesis list-streams --endpoint-url URL on the same server (AWS CLI v1)",
        "streams": STREAMS,
        **{f"{name}_s": round(seconds, 4) for name, seconds in best.items()},
        "targets": {"streams_ratio": 1.5},
    }
    if "aws_list_streams" in best:
        figures["streams_ratio"] = round(best["streams"] / best["aws_list_streams"], 2)
        figures["streams_names_ratio"] = round(best["streams_names"] / best["aws_list_streams"], 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
