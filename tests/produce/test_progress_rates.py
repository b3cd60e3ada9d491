"""The Producer's per-shard rate is what the shard took over the last seconds, not one request's
burst over the few milliseconds between two progress snapshots."""

from __future__ import annotations

from console.produce.pacing import ShardPacer
from console.produce.report import ProduceResult, ProgressMeter
from console.produce.settings import ProducerSettings


def test_a_paced_shards_rate_is_its_pace_not_a_batch_burst():
    settings = ProducerSettings(keys=10, records_per_key=10_000)
    result = ProduceResult(settings, "orders", started_at=0.0, finished_at=0.0)
    now = [0.0]
    seen = []
    meter = ProgressMeter(settings, result, ShardPacer(), clock=lambda: now[0], on_progress=seen.append, interval=0.25)
    meter.start(0.0)
    # Paced at 1,000 records/s: a batch of 500 is acknowledged at once every half second, and a
    # snapshot comes 20 ms after each batch (the interval is counted from the last report).
    for step in range(1, 11):
        now[0] = step * 0.5
        meter.count_ack("shardId-000000000000", 500)
        now[0] += 0.02
        meter.report(force=True)
        now[0] += 0.02
        meter.report(force=True)
    rates = [round(progress.shards["shardId-000000000000"].records_per_second) for progress in seen]
    assert all(800 <= rate <= 1200 for rate in rates[4:]), rates  # from the window's length on
