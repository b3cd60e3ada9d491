"""`kconsole produce --verify` through a TCP fault proxy in front of the real embedded server.

Every case runs the command as a user does (both modes), then an independent reader (plain
botocore, straight to the server) counts what really landed. Under every fault the run must
complete with 0 lost and 0 reordered (by first copy), its duplicates must not exceed the possible
duplicates it reported, and what verify says must match the reader. The figures go in the README's
fault table: with FAULT_TABLE=path set, each case appends its row there as a JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import zlib
from urllib.parse import urlsplit

import pytest

from console import cli
from tests.faultproxy import FaultProxy, Faults
from tests.server_truth import read_run

REQUEST_TIMEOUT = 1.5  # seconds: short, so a late delivery (held past it) costs seconds, not minutes
PUTS = frozenset({"PutRecord", "PutRecords"})

CASES = {
    "latency 20 ms": Faults(latency=0.02),
    "reset before 5%": Faults(reset_before=0.05),
    "reset before 20%": Faults(reset_before=0.20),
    "reset before 40%": Faults(reset_before=0.40),
    "reset after 5%": Faults(reset_after=0.05),
    "reset after 20%": Faults(reset_after=0.20),
    "reset after 40%": Faults(reset_after=0.40),
    "stalls (10%, 1 s)": Faults(stall=0.10, stall_seconds=1.0),
    "late delivery": Faults(late=0.05, late_seconds=REQUEST_TIMEOUT + 1.0, limit=3, operations=PUTS),
    "refused connections": Faults(refuse_down=0.1, refuse_period=0.25),
    "outage 3 s": Faults(),
}


def confirmed() -> list[str]:
    """["--yes"] where `produce` asks for confirmation before writing (refusing without a TTY), else []."""
    probe = ["produce", "s", "--keys", "1", "--records-per-key", "1", "--yes"]
    return [] if cli.build_parser().parse_known_args(probe)[1] else ["--yes"]


def upstream_port(local_kinesis) -> int:
    return urlsplit(local_kinesis.endpoint_url).port


async def produce_through(
    proxy: FaultProxy, stream: str, mode: str, keys: int, per_key: int, capsys
) -> tuple[int, dict]:
    # Small batches: enough requests in a few hundred records for a 5% fault to strike.
    argv = [
        "produce",
        stream,
        "--keys",
        str(keys),
        "--records-per-key",
        str(per_key),
        "--mode",
        mode,
        "--batch-size",
        "5",
        "--verify",
        "--json",
        "--endpoint-url",
        proxy.endpoint_url,
        "--region",
        "us-east-1",
        "--request-timeout",
        str(REQUEST_TIMEOUT),
        *confirmed(),
    ]
    code = await asyncio.to_thread(cli.main, argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, json.loads(captured.out)


async def run_case(name, faults, mode, keys, per_key, local_kinesis, make_stream, capsys):
    stream = await make_stream(shards=2)
    async with FaultProxy(upstream_port(local_kinesis), faults, seed=zlib.crc32(f"{name}/{mode}".encode())) as proxy:
        run = asyncio.create_task(produce_through(proxy, stream, mode, keys, per_key, capsys))
        if name.startswith("outage"):
            while proxy.stats["pass:PutRecords"] + proxy.stats["pass:PutRecord"] < 20:  # well into the run
                assert not run.done()
                await asyncio.sleep(0.01)
            await proxy.outage(3.0)
        if name.startswith("refused"):
            # The flapping listener may miss a short run (a run of 60 requests can fit between two down
            # windows): one window opened once the puts have begun makes sure the fault strikes them. It
            # outlasts any one request on a loaded machine (every answer closes its connection), so the
            # next request has to connect while the listener is down.
            while proxy.stats["pass:PutRecords"] + proxy.stats["pass:PutRecord"] < 3:
                assert not run.done()
                await asyncio.sleep(0.005)
            await proxy.refuse(1.0)
        code, report = await run
        stats = dict(proxy.stats)
    truth = await asyncio.to_thread(
        read_run,
        local_kinesis.endpoint_url,
        stream,
        report["run_id"],
        keys=[f"{report['run_id']}-{index:06d}" for index in range(keys)],
        records_per_key=per_key,
    )
    row = {
        "fault": name,
        "mode": mode,
        "sent": report["sent"],
        "retries": report["retries"],
        **truth.as_row(),
        "verify": {
            field: report[field]
            for field in (
                "ok",
                "lost",
                "duplicated",
                "late_duplicates",
                "possible_duplicates",
                "out_of_order",
                "waited_seconds",
            )
        },
        "proxy": {k: v for k, v in stats.items() if ":" not in k},
    }
    if os.environ.get("FAULT_TABLE"):
        with open(os.environ["FAULT_TABLE"], "a") as table:
            table.write(json.dumps(row) + "\n")
    return code, report, truth, stats


# The milder reset rates exercise the paths the 40% cases exercise harder: they run with -m slow, which
# keeps the default suite inside its time budget.
MILDER = {"reset before 5%", "reset before 20%", "reset after 5%", "reset after 20%"}


@pytest.mark.parametrize("mode", ["batch", "sequential"])
@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name in MILDER else name for name in CASES]
)
async def test_produce_verify_holds_under_network_faults(name, mode, local_kinesis, make_stream, capsys):
    keys, per_key = (30, 10) if mode == "batch" else (20, 10)
    code, report, truth, stats = await run_case(
        name, CASES[name], mode, keys, per_key, local_kinesis, make_stream, capsys
    )
    total = keys * per_key
    # What the server holds, counted by the independent reader.
    assert (truth.lost, truth.reordered) == (0, 0), truth
    assert truth.duplicated <= report["possible_duplicates"], (truth, report)
    # What the command said: complete, verified, and the same figures as the reader.
    assert code == 0, report
    assert (report["sent"], report["acknowledged"], report["read_back"]) == (total, total, total)
    assert (report["lost"], report["out_of_order"], report["misplaced"]) == (0, 0, 0)
    assert (report["duplicated"], report["late_duplicates"]) == (truth.duplicated, truth.late_duplicates)
    # The fault really happened.
    fault_kind = {
        "reset before": "reset_before",
        "reset after": "reset_after",
        "stalls": "stall",
        "late delivery": "late_delivered",
        "refused": "refusing",
        "outage": "outages",
    }
    for prefix, stat in fault_kind.items():
        if name.startswith(prefix):
            assert stats.get(stat, 0) > 0, stats
    if name.startswith(("reset after", "late delivery")):
        assert report["possible_duplicates"] > 0
    if name.startswith("refused"):
        # A refused connection sent nothing: retried, not counted as a possible duplicate. (A connection
        # accepted by the kernel just as the listener closes is reset after the request went out:
        # that one is rightly counted, so a few remain.)
        assert truth.duplicated == 0 and report["possible_duplicates"] < report["retries"] / 2
    if name == "late delivery":
        # The held request landed after its resend and after later records of its keys: verify waited
        # for it and reports the copies as late duplicates, not as lost order.
        assert truth.late_duplicates > 0 and report["waited_seconds"] > 0


async def test_refused_connections_are_retried_and_not_possible_duplicates(local_kinesis, make_stream):
    """Puts while nothing listens (the proxy is down from the start, so no connection is half made):
    every failure is a refused connection, which sent nothing."""
    from console.backend import BackendConfig, open_backend
    from console.produce.producer import OrderedProducer
    from console.produce.settings import ProducerSettings

    stream = await make_stream(shards=2)
    async with FaultProxy(upstream_port(local_kinesis)) as proxy:
        proxy.down()
        config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=proxy.endpoint_url, read_timeout=2)
        async with open_backend(config) as kinesis:
            for mode in ("batch", "sequential"):
                settings = ProducerSettings(keys=10, records_per_key=3, mode=mode, pacing=False, retry_cap=0.2)
                producer = OrderedProducer(
                    stream, settings, put_records=kinesis.put_records, put_record=kinesis.put_record
                )
                run = asyncio.create_task(producer.run())
                await asyncio.sleep(1.0)
                assert producer.result.retries > 0 and producer.result.acknowledged == 0
                await proxy.up()
                result = await run
                assert result.complete and result.retries > 0
                assert result.possible_duplicates == 0 and result.last_unknown_sent is None
                proxy.down()
                await asyncio.sleep(0.1)  # the client sees its kept-alive connections reset before the next run


@pytest.mark.parametrize("mode, operation", [("batch", "PutRecords"), ("sequential", "PutRecord")])
async def test_a_refused_record_is_that_records_failure_not_the_runs(
    mode, operation, local_kinesis, make_stream, capsys
):
    """The server refuses one request mid-run (answered by the proxy: no local server refuses a valid
    record). Its records fail with the reason and their keys stop; every other key completes, the
    run is verified and exits 1 with the partial report, not 2 as if the input were bad."""
    keys, per_key = 20, 10
    stream = await make_stream(shards=2)
    faults = Faults(invalid=1.0, skip=12, limit=1, operations=frozenset({operation}))
    async with FaultProxy(upstream_port(local_kinesis), faults) as proxy:
        code, report = await produce_through(proxy, stream, mode, keys, per_key, capsys)
    refused = 5 if mode == "batch" else 1  # one request: a batch of 5 keys, or one record
    assert code == 1 and not report["ok"] and report["stopped"] is None
    assert report["failed"] == refused and len(report["failed_records"]) == refused
    assert all("refused by the fault proxy" in failure["error"] for failure in report["failed_records"])
    assert report["acknowledged"] == report["sent"] - refused
    assert report["not_attempted"] == keys * per_key - report["sent"] == report["abandoned"] > 0
    assert report["verified"] and (report["lost"], report["out_of_order"]) == (0, 0)
    truth = await asyncio.to_thread(
        read_run,
        local_kinesis.endpoint_url,
        stream,
        report["run_id"],
        keys=[f"{report['run_id']}-{index:06d}" for index in range(keys)],
        records_per_key=per_key,
    )
    assert truth.records == report["acknowledged"] and truth.reordered == 0


async def test_a_failed_read_back_keeps_the_produce_summary(local_kinesis, make_stream):
    """The server goes away between the last put and the read-back: the run's figures stand."""
    from console.backend import BackendConfig, open_backend
    from console.commands.produce import summary_document, summary_text
    from console.produce.settings import ProducerSettings
    from console.produce.verify import run_and_verify

    stream = await make_stream(shards=2)
    async with FaultProxy(upstream_port(local_kinesis)) as proxy:
        config = BackendConfig(kind="endpoint", region="us-east-1", endpoint_url=proxy.endpoint_url, read_timeout=2)
        async with open_backend(config) as kinesis:
            kinesis.max_retries = 1
            result, report = await run_and_verify(
                kinesis, stream, ProducerSettings(keys=10, records_per_key=5), on_verifying=lambda _wait: proxy.down()
            )
    assert report is None and result.acknowledged == 50
    assert result.verification_error.startswith("verification failed: cannot reach")
    document = summary_document(result, report)
    assert (document["acknowledged"], document["verified"], document["ok"]) == (50, False, False)
    assert "50/50 acknowledged" in summary_text(result, report)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["batch", "sequential"])
@pytest.mark.parametrize("name", ["reset before 40%", "reset after 40%", "late delivery", "outage 3 s"])
async def test_bigger_runs_under_network_faults(name, mode, local_kinesis, make_stream, capsys):
    keys, per_key = (200, 20) if mode == "batch" else (50, 20)
    code, report, truth, _stats = await run_case(
        name, CASES[name], mode, keys, per_key, local_kinesis, make_stream, capsys
    )
    assert code == 0 and (truth.lost, truth.reordered) == (0, 0)
    assert truth.duplicated <= report["possible_duplicates"]
    assert (report["duplicated"], report["late_duplicates"]) == (truth.duplicated, truth.late_duplicates)


@pytest.mark.parametrize("mode", ["batch", "sequential"])
def test_killing_the_server_mid_run_stops_in_bounded_time(mode, tmp_path):
    """One bounded give-up for the run (not one per key), then the partial report and exit 1."""
    from console.localserver.supervision import LocalKinesisServer

    server = LocalKinesisServer()
    endpoint = server.start()
    try:
        command = [
            sys.executable,
            "-m",
            "console.cli",
            "produce",
            "doomed",
            "--endpoint-url",
            endpoint,
            "--region",
            "us-east-1",
            "--keys",
            "40",
            "--records-per-key",
            "200",
            "--rate",
            "400",
            "--mode",
            mode,
            "--give-up-after",
            "3",
            "--request-timeout",
            "2",
            "--verify",
            "--json",
            *confirmed(),
        ]
        env = {**os.environ, "KCONSOLE_CONFIG": str(tmp_path / "none.toml")}
        _create_stream(endpoint)
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        time.sleep(4.0)  # producing by now (8,000 records at 400/s take 20 s)
        assert process.poll() is None
        server.stop()
        killed_at = time.monotonic()
        out, err = process.communicate(timeout=60)
        took = time.monotonic() - killed_at
    finally:
        server.stop()
    assert process.returncode == 1, err
    assert took < 3 + 2 * 2 + 5, f"took {took:.1f} s"  # give-up + a request timeout or two + slack
    errors = [line for line in err.splitlines() if line.startswith("kconsole: error:")]
    assert len(errors) == 1 and "no answer from the endpoint" in errors[0], err
    assert "Traceback" not in err
    report = json.loads(out)
    assert report["stopped"] and report["error"]["code"] == "run_stopped" and not report["ok"]
    assert 0 < report["acknowledged"] < 8000
    assert report["sent"] == report["acknowledged"] + report["failed"]
    assert report["not_attempted"] == 8000 - report["sent"]
    assert report["verification_error"] == "not verified: the endpoint stopped answering"
    assert any("failing:" in line for line in err.splitlines()), err  # progress said what was failing


def _create_stream(endpoint: str) -> None:
    import botocore.session

    client = botocore.session.get_session().create_client(
        "kinesis", region_name="us-east-1", endpoint_url=endpoint, aws_access_key_id="x", aws_secret_access_key="x"
    )
    client.create_stream(StreamName="doomed", ShardCount=2)
    client.get_waiter("stream_exists").wait(StreamName="doomed", WaiterConfig={"Delay": 0.1})
