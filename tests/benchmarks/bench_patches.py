"""What each patch in console/patches.py is worth: the same work with it and without it (turned off by
name through KCONSOLE_NO_PATCHES). A patch worth less than 10 ms where it counts has no place there.

- Start-up patches, in fresh processes as a user runs them (best of ROUNDS wall-clock runs,
  interleaved, and the median run's CPU): lazy_subparsers on `kconsole predict abc --shards 4`; deferred_tls and lean_endpoints
  on `kconsole streams --endpoint-url URL` (on `kconsole local serve`, two streams); all of them off.
- Per-call patches, in this process (median CPU of ROUNDS runs): plain_answers parsing a
  10,000-shard ListShards answer, and 100 PutRecords answers of 500 entries; plain_puts serializing
  100 PutRecords requests of 500 128-byte records (the producer's per-record cost).
Prints one JSON line of figures last.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import (
    aws_environment,
    compiled_like_an_install,
    emit,
    fastest,
    kconsole_command,
    local_serve,
    run_process,
)

from console import patches

ROUNDS = 9


async def create_streams(endpoint: str) -> None:
    from console.backend import BackendConfig, open_backend

    async with open_backend(BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=endpoint)) as kinesis:
        for name in ("orders", "clicks"):
            await kinesis.ensure_stream(name, 4)


def start_up(endpoint: str) -> dict[str, float]:
    """Milliseconds each start-up patch saves: best wall time without it minus best with it."""
    env = aws_environment()
    env.pop(patches.SWITCH, None)
    predict = [*kconsole_command(), "predict", "abc", "--shards", "4"]
    streams = [*kconsole_command(), "streams", "--endpoint-url", endpoint, "--region", "us-east-1"]
    cases = {
        "predict": (predict, None),
        "predict_no_lazy_subparsers": (predict, "lazy_subparsers"),
        "predict_no_patches": (predict, "1"),
        "streams": (streams, None),
        "streams_no_deferred_tls": (streams, "deferred_tls"),
        "streams_no_lean_endpoints": (streams, "lean_endpoints"),
        "streams_no_patches": (streams, "1"),
    }
    runs: dict[str, list] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, (argv, switch) in cases.items():
            runs[name].append(run_process(argv, env=env if switch is None else {**env, patches.SWITCH: switch}))
    best = {name: fastest(found).wall * 1000 for name, found in runs.items()}
    # CPU, the median run's: on a busy machine it moves less than wall time.
    cpu = {name: statistics.median(run.cpu for run in found) * 1000 for name, found in runs.items()}
    figures = {f"{name}_ms": round(ms, 1) for name, ms in best.items()}
    figures.update({f"{name}_cpu_ms": round(ms, 1) for name, ms in cpu.items()})
    for patch, (without, base) in {
        "lazy_subparsers": ("predict_no_lazy_subparsers", "predict"),
        "deferred_tls": ("streams_no_deferred_tls", "streams"),
        "lean_endpoints": ("streams_no_lean_endpoints", "streams"),
    }.items():
        figures[f"{patch}_worth_ms"] = round(best[without] - best[base], 1)
        figures[f"{patch}_worth_cpu_ms"] = round(cpu[without] - cpu[base], 1)
    return figures


def cpu_ms(work) -> float:
    spent = []
    for _ in range(ROUNDS):
        started = time.process_time()
        work()
        spent.append((time.process_time() - started) * 1000)
    return statistics.median(spent)


def with_switch(switch: str | None, make):
    """What `make()` builds with KCONSOLE_NO_PATCHES set to `switch` (unset for None)."""
    saved = os.environ.pop(patches.SWITCH, None)
    if switch is not None:
        os.environ[patches.SWITCH] = switch
    try:
        return make()
    finally:
        os.environ.pop(patches.SWITCH, None)
        if saved is not None:
            os.environ[patches.SWITCH] = saved


def per_call() -> dict[str, float]:
    import botocore.session
    from aiobotocore.config import AioConfig
    from aiobotocore.session import AioSession
    from botocore.serialize import create_serializer

    from console.backend.clients import PlainPutRecordsSerializer, response_parser_factory

    model = botocore.session.get_session().get_service_model("kinesis")
    shards = [
        {
            "ShardId": f"shardId-{n:012d}",
            "HashKeyRange": {"StartingHashKey": str(n * 10**34), "EndingHashKey": str((n + 1) * 10**34 - 1)},
            "SequenceNumberRange": {"StartingSequenceNumber": str(49600000000000000000 + n)},
        }
        for n in range(10_000)
    ]
    listing = {"body": json.dumps({"Shards": shards}).encode(), "headers": {}, "status_code": 200}
    entry = {"SequenceNumber": "4960" + "1" * 52, "ShardId": "shardId-000000000001"}
    answer = {"FailedRecordCount": 0, "Records": [entry] * 500}
    put_answer = {"body": json.dumps(answer).encode(), "headers": {}, "status_code": 200}
    list_shards, put_records = model.operation_model("ListShards"), model.operation_model("PutRecords")

    def parse_all(parser, response, operation, times):
        async def parse():
            for _ in range(times):
                await parser.parse(response, operation.output_shape)

        return lambda: asyncio.run(parse())

    figures: dict[str, float] = {}
    for label, switch in (("", None), ("_no_plain_answers", "plain_answers")):
        parser = with_switch(switch, response_parser_factory).create_parser("json")
        figures[f"list_shards_10k_parse{label}_ms"] = cpu_ms(parse_all(parser, listing, list_shards, 1))
        figures[f"put_records_50k_answers_parse{label}_ms"] = cpu_ms(parse_all(parser, put_answer, put_records, 100))

    request = {"StreamName": "s", "Records": [{"Data": b"x" * 128, "PartitionKey": f"k{n}"} for n in range(500)]}

    async def client_serializer(switch: str | None):
        async with AioSession().create_client(
            "kinesis",
            region_name="us-east-1",
            aws_access_key_id="a",
            aws_secret_access_key="b",
            config=AioConfig(parameter_validation=False),  # as the checked-puts client is made
        ) as client:
            with_switch(switch, lambda: patches.wrap_serializer(client, PlainPutRecordsSerializer))
            return client._serializer

    botocore_serializer = create_serializer("json", include_validation=False)
    assert PlainPutRecordsSerializer(botocore_serializer).serialize_to_request(request, put_records) == (
        botocore_serializer.serialize_to_request(request, put_records)
    )
    for label, switch in (("", None), ("_no_plain_puts", "plain_puts")):
        serializer = asyncio.run(client_serializer(switch))
        figures[f"put_records_50k_serialize{label}_ms"] = cpu_ms(
            lambda serializer=serializer: [serializer.serialize_to_request(request, put_records) for _ in range(100)]
        )
    figures = {name: round(ms, 1) for name, ms in figures.items()}
    figures["plain_answers_worth_list_shards_10k_ms"] = round(
        figures["list_shards_10k_parse_no_plain_answers_ms"] - figures["list_shards_10k_parse_ms"], 1
    )
    figures["plain_answers_worth_put_records_50k_ms"] = round(
        figures["put_records_50k_answers_parse_no_plain_answers_ms"] - figures["put_records_50k_answers_parse_ms"], 1
    )
    figures["plain_puts_worth_50k_records_ms"] = round(
        figures["put_records_50k_serialize_no_plain_puts_ms"] - figures["put_records_50k_serialize_ms"], 1
    )
    return figures


def main() -> None:
    compiled_like_an_install()
    with local_serve() as endpoint:
        asyncio.run(create_streams(endpoint))
        figures = start_up(endpoint)
    figures.update(per_call())
    emit(
        {
            "benchmark": "patches",
            "path": "each patch of console/patches.py on and off (KCONSOLE_NO_PATCHES=name)",
            "baseline": "the same work with the patch off",
            **figures,
            "targets": {"every patch worth at least (ms)": 10},
        }
    )


if __name__ == "__main__":
    main()
