"""Where a read starts and where it stops: `--from`, `--to` and `--last`, checked before any read.

A start is LATEST, TRIM_HORIZON, AT_TIMESTAMP or AT_SEQUENCE_NUMBER (GetShardIterator's own types).
An end is `latest` (the tip each shard has when the reader reaches it: what `tail` always did) or a
moment (`now` is the moment the command started): each shard is read up to its first record that
arrived after the moment, and no further (nor into its children, which hold only newer records).
`--last 15m` is `--from <now - 15m> --to now`.

Times are ISO-8601, taken as UTC when they carry no offset. What cannot be a window is refused here,
in one line: an end before the start, a moment in the future, a duration beyond what any stream
retains (`check_retention` compares the start with the stream's own retention once it is known).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from console.errors import BadInput

LATEST = "LATEST"
TRIM_HORIZON = "TRIM_HORIZON"
AT_TIMESTAMP = "AT_TIMESTAMP"
AT_SEQUENCE_NUMBER = "AT_SEQUENCE_NUMBER"
AFTER_SEQUENCE_NUMBER = "AFTER_SEQUENCE_NUMBER"

# Kinesis keeps records at most 365 days (8,760 hours): no window can reach further back.
MAX_RETENTION = timedelta(hours=8760)
# Clocks disagree a little: a moment this close ahead of ours is taken as now, not as the future.
CLOCK_SKEW = timedelta(seconds=5)

_SEQUENCE_NUMBER = re.compile(r"\d{1,128}")
_DURATION = re.compile(r"(\d{1,7})\s*(s|sec|m|min|h|d)", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_TIME_EXAMPLE = "an ISO-8601 time (e.g. 2026-11-22T20:00:00Z)"


@dataclass(frozen=True, slots=True)
class StartPosition:
    """Where to start reading: LATEST, TRIM_HORIZON, AT_TIMESTAMP or AT_SEQUENCE_NUMBER."""

    iterator_type: str
    timestamp: datetime | None = None
    sequence_number: str | None = None

    @property
    def reads_history(self) -> bool:
        """Whether closed shards can hold records we should show."""
        return self.iterator_type != LATEST

    def describe(self) -> str:
        if self.timestamp is not None:
            return _iso(self.timestamp)
        return self.sequence_number or self.iterator_type.lower().replace("_", "-")


@dataclass(frozen=True, slots=True)
class EndPosition:
    """Where to stop: at each shard's tip (`moment` None), or before the first record past `moment`."""

    moment: datetime | None = None

    def describe(self) -> str:
        return "latest" if self.moment is None else _iso(self.moment)


def parse_time(text: str, option: str) -> datetime:
    """An ISO-8601 moment, UTC unless it names an offset."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise BadInput(f"{option} must be {_TIME_EXAMPLE}; got {text[:80]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


def parse_start(text: str | None) -> StartPosition:
    """--from: latest | trim-horizon | an ISO-8601 timestamp | a sequence number (all digits)."""
    raw = (text or "latest").strip()
    lowered = raw.lower().replace("_", "-")
    if lowered == "latest":
        return StartPosition(LATEST)
    if lowered in ("trim-horizon", "horizon", "earliest", "beginning"):
        return StartPosition(TRIM_HORIZON)
    if _SEQUENCE_NUMBER.fullmatch(raw):
        return StartPosition(AT_SEQUENCE_NUMBER, sequence_number=raw)
    try:
        moment = parse_time(raw, "--from")
    except BadInput:
        raise BadInput(
            f"--from must be latest, trim-horizon, {_TIME_EXAMPLE} or a sequence number (digits); "
            f"got {(text or '')[:80]!r}"
        ) from None
    return StartPosition(AT_TIMESTAMP, timestamp=moment)


def parse_end(text: str | None, now: datetime) -> EndPosition:
    """--to: latest | now | an ISO-8601 timestamp."""
    raw = (text or "latest").strip()
    lowered = raw.lower()
    if lowered == "latest":
        return EndPosition()
    if lowered == "now":
        return EndPosition(now)
    try:
        return EndPosition(parse_time(raw, "--to"))
    except BadInput:
        raise BadInput(f"--to must be latest, now or {_TIME_EXAMPLE}; got {raw[:80]!r}") from None


def parse_duration(text: str, option: str = "--last") -> timedelta:
    """`15m`, `2h`, `90s`, `7d`, or combined (`1h30m`): at least a second, at most 365 days."""
    raw = text.strip()
    position, total = 0, 0
    for match in _DURATION.finditer(raw):
        if match.start() != position:
            break
        total += int(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
        position = match.end()
    if not raw or position != len(raw):
        raise BadInput(f"{option} must be a duration such as 90s, 15m, 2h or 7d; got {raw[:80]!r}")
    duration = timedelta(seconds=total)
    if not timedelta(seconds=1) <= duration <= MAX_RETENTION:
        raise BadInput(f"{option} must be from 1s to 365d (the longest any stream keeps records); got {raw[:80]!r}")
    return duration


def resolve_window(
    start: str | None, end: str | None, last: str | None, *, follow: bool, now: datetime
) -> tuple[StartPosition, EndPosition]:
    """The window the options describe, or BadInput naming what is wrong with it."""
    if last is not None:
        if start is not None or end is not None:
            raise BadInput("--last is --from and --to in one: give either --last or --from/--to", code="usage")
        start_position = StartPosition(AT_TIMESTAMP, timestamp=now - parse_duration(last))
        end_position = EndPosition(now)
    else:
        start_position = parse_start(start or ("latest" if follow else "trim-horizon"))
        end_position = parse_end(end, now)
    if follow and end_position.moment is not None:
        raise BadInput(
            "--follow reads until stopped; --to and --last end the read: give one or the other", code="usage"
        )
    for what, moment in (("--from", start_position.timestamp), ("--to", end_position.moment)):
        if moment is not None and moment > now + CLOCK_SKEW:
            raise BadInput(f"{what} {_iso(moment)} is in the future (now is {_iso(now)})")
        if moment is not None and moment < now - MAX_RETENTION:
            raise BadInput(f"{what} {_iso(moment)} is more than 365 days ago: no stream keeps records that long")
    if (
        start_position.timestamp is not None
        and end_position.moment is not None
        and end_position.moment < start_position.timestamp
    ):
        raise BadInput(f"--to {_iso(end_position.moment)} is before --from {_iso(start_position.timestamp)}")
    if start_position.iterator_type == LATEST and end_position.moment is not None:
        raise BadInput(
            "--from latest reads only records that arrive from now on, and --to ends before them: "
            "give --from a time, or --follow",
            code="usage",
        )
    return start_position, end_position


def check_retention(
    start: StartPosition, retention_hours: int, now: datetime, stream: str, end: EndPosition | None = None
) -> None:
    """A window older than the stream keeps records is a mistake worth a line, not an empty read."""
    oldest = now - timedelta(hours=retention_hours)
    for option, moment in (("--from", start.timestamp), ("--to", end.moment if end is not None else None)):
        if moment is not None and moment < oldest - CLOCK_SKEW:
            raise BadInput(
                f"{option} {_iso(moment)} is beyond {stream}'s retention of {retention_hours} h "
                f"(its oldest records arrived after {_iso(oldest)})"
            )


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
