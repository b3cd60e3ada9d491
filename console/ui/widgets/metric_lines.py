"""CloudWatch series as text: one line per metric, the last 30 minutes as a sparkline and the hour's
peak minute (CloudWatch's newest minute is often not complete yet). Shared by the Heat tab (stream and
shard level) and the Consumers tab."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text

from console.ui.format import format_rate
from console.ui.widgets.shard_columns import sparkline

if TYPE_CHECKING:  # the metrics' modules load with the first metrics, not with the console's first screen
    from console.heat.capacity import CapacitySummary, MetricSeries


def format_millis(value: int) -> str:
    from console.consumers.report import format_millis as formatted

    return formatted(value)


SPARK_MINUTES = 30
LABEL_WIDTH = 15


def _per_second(unit: str) -> Callable[[float], str]:
    return lambda per_minute: format_rate(per_minute / 60, unit)


def _per_minute(value: float) -> str:
    return f"{value:,.0f}/min"


# Metric -> (label, how a minute's value is shown). Stream-level names first, then shard-level ones.
METRIC_LABELS: dict[str, tuple[str, Callable[[float], str]]] = {
    "IncomingRecords": ("in records", _per_second("r/s")),
    "IncomingBytes": ("in bytes", _per_second("B/s")),
    "GetRecords.IteratorAgeMilliseconds": ("iterator age", lambda v: format_millis(int(v))),
    "IteratorAgeMilliseconds": ("iterator age", lambda v: format_millis(int(v))),
    "OutgoingBytes": ("out bytes", _per_second("B/s")),
    "WriteProvisionedThroughputExceeded": ("write throttled", _per_minute),
    "ReadProvisionedThroughputExceeded": ("read throttled", _per_minute),
    "GetRecords.Latency": ("read latency", lambda v: f"{v:,.0f} ms"),
}


def metric_lines(metrics: MetricSeries, *, indent: str = "") -> list[str]:
    """'in records          ▁▁▂▅█▃…  peak 10r/s', one per metric, in the series' order."""
    lines = []
    for name, values in metrics.series.items():
        label, shown = METRIC_LABELS.get(name, (name, lambda v: f"{v:,.0f}"))
        spark = sparkline(tuple(int(v) for v in values[-SPARK_MINUTES:]))
        lines.append(f"{indent}{label:<{LABEL_WIDTH}} {spark:<{SPARK_MINUTES}} peak {shown(metrics.peak(name))}")
    return lines


def summary_text(summary: CapacitySummary, *, long: bool = False) -> str:
    """The last few minutes: 'lag 3.2 s  throttled 0' (long: 'iterator age 3.2 s · 0 throttled in 5 min')."""
    parts = []
    if summary.iterator_age_ms is not None:
        age = format_millis(int(summary.iterator_age_ms))
        parts.append(f"iterator age {age}" if long else f"lag {age}")
    if summary.throttled is not None:
        from console.heat.capacity import RECENT_MINUTES

        parts.append(
            f"{summary.throttled:,} throttled in {RECENT_MINUTES} min" if long else f"throttled {summary.throttled:,}"
        )
    return (" · " if long else "  ").join(parts)


def capacity_text(metrics: MetricSeries | None, problem: str | None, *, title: str, empty: str) -> Text:
    """A titled block of metric lines, or the one line that says why there are none."""
    if metrics is None:
        return Text(problem or "fetching CloudWatch metrics…", style="dim")
    if not metrics.has_data:
        return Text(empty, style="dim")
    text = Text()
    text.append(title, style="bold")
    from console.heat.capacity import CapacitySummary

    summary = CapacitySummary.of(metrics)
    if summary is not None:
        text.append(f"  {summary_text(summary, long=True)}", style="bold yellow" if summary.throttled else "")
    text.append("\n" + "\n".join(metric_lines(metrics)))
    return text


def stream_capacity_text(metrics: MetricSeries | None, problem: str | None = None) -> Text:
    """The stream-level block (Heat and Consumers tabs)."""
    return capacity_text(
        metrics,
        problem,
        title=f"CloudWatch · stream · {SPARK_MINUTES} min",
        empty="CloudWatch: no CloudWatch data for this stream yet",
    )
