"""Where a read starts and stops: --from, --to and --last, checked before anything is read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from console.errors import BadInput
from console.read.positions import (
    AT_SEQUENCE_NUMBER,
    AT_TIMESTAMP,
    LATEST,
    TRIM_HORIZON,
    check_retention,
    parse_duration,
    resolve_window,
)
from console.read.tail_options import records_until

NOW = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)


def test_defaults_follow_what_tail_always_did():
    start, end = resolve_window(None, None, None, follow=False, now=NOW)
    assert start.iterator_type == TRIM_HORIZON and end.moment is None
    start, end = resolve_window(None, None, None, follow=True, now=NOW)
    assert start.iterator_type == LATEST and end.moment is None


def test_last_is_from_and_to_in_one():
    start, end = resolve_window(None, None, "1h30m", follow=False, now=NOW)
    assert start.iterator_type == AT_TIMESTAMP and start.timestamp == NOW - timedelta(minutes=90)
    assert end.moment == NOW


def test_times_without_an_offset_are_utc_and_sequence_numbers_are_kept():
    start, end = resolve_window("2026-11-22T19:00:00", "2026-11-22T21:00:00+02:00", None, follow=False, now=NOW)
    assert start.timestamp == datetime(2026, 11, 22, 19, tzinfo=UTC)
    assert end.moment == datetime(2026, 11, 22, 19, tzinfo=UTC)
    start, _ = resolve_window(
        "49600000000000000000000000000000000000000000000000005", "now", None, follow=False, now=NOW
    )
    assert start.iterator_type == AT_SEQUENCE_NUMBER


@pytest.mark.parametrize(
    ("start", "end", "last", "follow", "said"),
    [
        ("2026-11-22T19:00:00Z", "2026-11-22T18:00:00Z", None, False, "before --from"),
        ("2026-11-22T21:00:00Z", None, None, False, "in the future"),
        (None, "2026-11-23T00:00:00Z", None, False, "in the future"),
        ("2025-01-01T00:00:00Z", None, None, False, "365 days"),
        ("trim-horizon", None, "15m", False, "--last"),
        (None, "now", None, True, "--follow"),
        ("latest", "now", None, False, "--from latest"),
        ("noon", None, None, False, "--from must be"),
        (None, "soon", None, False, "--to must be"),
    ],
)
def test_what_cannot_be_a_window_is_one_line(start, end, last, follow, said):
    with pytest.raises(BadInput, match=said.replace("-", r"\-")):
        resolve_window(start, end, last, follow=follow, now=NOW)


@pytest.mark.parametrize("text", ["", "15", "m", "15x", "0s", "366d", "9999999h", "1h 2"])
def test_bad_durations(text):
    with pytest.raises(BadInput):
        parse_duration(text)


def test_a_start_beyond_the_streams_retention_is_refused():
    start, _ = resolve_window("2026-11-21T10:00:00Z", None, None, follow=False, now=NOW)
    check_retention(start, 48, NOW, "orders")
    with pytest.raises(BadInput, match="retention of 24 h"):
        check_retention(start, 24, NOW, "orders")
    start, end = resolve_window("trim-horizon", "2026-11-21T10:00:00Z", None, follow=False, now=NOW)
    with pytest.raises(BadInput, match=r"--to .* retention"):
        check_retention(start, 24, NOW, "orders", end)


def test_a_page_is_cut_at_its_first_record_past_the_end():
    page = [{"ApproximateArrivalTimestamp": NOW + timedelta(seconds=s)} for s in (-2, -1, 0, 1, 0)]
    assert records_until(page, NOW) == 3
    assert records_until(page[:3], NOW) == 3
    assert records_until([], NOW) == 0
    naive = [{"ApproximateArrivalTimestamp": datetime(2026, 11, 22, 20, 0, 1)}]
    assert records_until(naive, NOW) == 0
