"""`kconsole stream describe NAME`: everything DescribeStreamSummary says about a stream, plus its tags,
EFO consumers and enhanced monitoring, as one document (a FIELD/VALUE table as text)."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.backend.protocol import ConsumersBackend
from console.commands._backend import with_backend
from console.commands._options import options_from
from console.commands._output import emit, note, render_table, run_async
from console.errors import ConsoleError
from console.topology.model import EfoConsumer, StreamSummary


@dataclass(frozen=True)
class DescribeOptions:
    stream: str


def run_describe(args: argparse.Namespace) -> int:
    document = run_async(_describe(args, options_from(DescribeOptions, args)))
    emit(args, document, lambda: render_description(document))
    return 0


async def _describe(args: argparse.Namespace, options: DescribeOptions) -> dict[str, Any]:
    async with with_backend(args, stream=options.stream) as kinesis:
        raw = await kinesis.describe_stream_details(options.stream)
        tags, consumers = await asyncio.gather(
            kinesis.stream_tags(options.stream),
            _consumers_or_none(kinesis, raw.get("StreamARN")),
        )
        label = kinesis.label
    metrics = sorted({m for group in raw.get("EnhancedMonitoring", []) for m in group.get("ShardLevelMetrics", [])})
    summary = StreamSummary.from_api(raw)
    document = {
        _snake(key): _plain(value)
        for key, value in raw.items()
        if key
        not in (
            "EnhancedMonitoring",
            "WarmThroughput",
            "MaxRecordSizeInKiB",
            "RecordDistributionStrategy",
            "ChannelCount",
        )
    }
    document.update(
        {
            "record_distribution": summary.shown("record_distribution", summary.record_distribution),
            "max_record_size_kib": summary.shown("max_record_size_kib", summary.max_record_size_kib),
            "warm_throughput": summary.shown(
                "warm_throughput",
                {
                    "target_mibps": summary.warm_throughput_target_mibps,
                    "current_mibps": summary.warm_throughput_current_mibps,
                },
            ),
            "channel_count": summary.channel_count,
            "stream_id": summary.stream_id or None,
            "badges": summary.badges(),
            "backend": label,
            "stream_mode": (raw.get("StreamModeDetails") or {}).get("StreamMode", "PROVISIONED"),
            "enhanced_monitoring": metrics,
            "tags": tags,
            "consumer_count": raw.get("ConsumerCount", None if consumers is None else len(consumers)),
            "consumers": None if consumers is None else [consumer.to_json() for consumer in consumers],
        }
    )
    document.pop("stream_mode_details", None)
    return document


def _snake(name: str) -> str:
    import re

    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace("a_r_n", "arn")


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def render_description(document: dict[str, Any]) -> str:
    first = (
        "stream_name",
        "stream_status",
        "stream_mode",
        "open_shard_count",
        "retention_period_hours",
        "encryption_type",
        "key_id",
        "record_distribution",
        "max_record_size_kib",
        "stream_creation_timestamp",
        "stream_arn",
        "stream_id",
        "consumer_count",
        "channel_count",
        "backend",
    )
    left_out = ("record_distribution", "max_record_size_kib")  # None: the server did not say
    rows = [
        (key, "unknown" if key in left_out and document[key] is None else document[key])
        for key in first
        if key in document
    ]
    warm = document.get("warm_throughput")
    rows.append(
        (
            "warm_throughput",
            "unknown"
            if warm is None
            else "-"
            if warm.get("target_mibps") is None
            else f"{warm['target_mibps']} MiB/s target, {warm.get('current_mibps')} MiB/s now",
        )
    )
    rows += [
        (key, value)
        for key, value in document.items()
        if key not in first and key not in ("tags", "consumers", "enhanced_monitoring", "warm_throughput", "badges")
    ]
    rows.append(("enhanced_monitoring", ", ".join(document["enhanced_monitoring"]) or "off"))
    rows.append(("tags", ", ".join(f"{k}={v}" for k, v in sorted(document["tags"].items())) or "none"))
    text = render_table(("FIELD", "VALUE"), [(key, "-" if value is None else str(value)) for key, value in rows])
    if document.get("badges"):
        text = " · ".join(document["badges"]) + "\n" + text
    if document["consumers"]:
        text += "\n\n" + render_table(
            ("CONSUMER", "STATUS", "CREATED"),
            [(c["name"], c["status"], c["created"] or "-") for c in document["consumers"]],
        )
    return text


async def _consumers_or_none(kinesis: ConsumersBackend, stream_arn: str | None) -> list[EfoConsumer] | None:
    """The stream's EFO consumers; None, with one line on stderr, where the endpoint cannot list them."""
    if not stream_arn:
        return []
    try:
        return await kinesis.list_stream_consumers(stream_arn)
    except ConsoleError as error:
        if error.code != "unsupported_operation":
            raise
        note(f"kconsole: consumers unknown: {error.message}")
        return None
