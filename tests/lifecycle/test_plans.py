"""AWS's rules for a stream's life, checked before any call: names, shard counts, retention, the
capacity-mode switch window, and what a delete loses."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.bounds import validate_stream_name
from console.errors import BadInput
from console.lifecycle.plans import plan_create, plan_delete, plan_encryption, plan_mode, plan_retention
from console.lifecycle.rules import (
    MAX_SHARDS,
    check_kms_key,
    check_retention_hours,
    parse_mode,
    parse_shard_count,
)
from console.topology.model import StreamSummary

AWS_NAME = re.compile(r"[a-zA-Z0-9_.-]+")
HOUR = 3600.0


def summary(**changes) -> StreamSummary:
    values = dict(
        name="orders",
        status="ACTIVE",
        mode="PROVISIONED",
        open_shard_count=4,
        retention_hours=48,
        encryption="NONE",
        arn="arn:aws:kinesis:us-east-1:123456789012:stream/orders",
    )
    values.update(changes)
    return StreamSummary(**values)


@given(st.text(max_size=140))
def test_a_name_is_accepted_exactly_when_aws_would(name):
    valid = 1 <= len(name) <= 128 and AWS_NAME.fullmatch(name) is not None
    if valid:
        assert validate_stream_name(name) == name
    else:
        with pytest.raises(BadInput, match="not a valid stream name"):
            validate_stream_name(name)


@pytest.mark.parametrize("text, expected", [("1", 1), ("10000", MAX_SHARDS), (" 8 ", 8)])
def test_shard_counts_within_the_bound(text, expected):
    assert parse_shard_count(text) == expected


@pytest.mark.parametrize("text", ["0", "10001", "-1", "1.5", "abc", "", "9" * 5000, "٣"])
def test_shard_counts_outside_the_bound_are_one_line_of_bad_input(text):
    with pytest.raises(BadInput) as caught:
        parse_shard_count(text)
    assert caught.value.exit_code == 2 and "\n" not in caught.value.message
    assert "from 1 to 10,000" in caught.value.message


@pytest.mark.parametrize("hours, ok", [("24", True), ("8760", True), ("23", False), ("8761", False), ("x", False)])
def test_retention_is_24_to_8760_hours(hours, ok):
    if ok:
        assert check_retention_hours(hours) == int(hours)
    else:
        with pytest.raises(BadInput, match="from 24 to 8760"):
            check_retention_hours(hours)


def test_modes_and_kms_keys():
    assert parse_mode("on-demand") == "ON_DEMAND" and parse_mode("Provisioned") == "PROVISIONED"
    with pytest.raises(BadInput):
        parse_mode("serverless")
    assert check_kms_key(" alias/aws/kinesis ") == "alias/aws/kinesis"
    for bad in ("", "alias/with space", "k" * 2049):
        with pytest.raises(BadInput):
            check_kms_key(bad)


def test_retention_decrease_says_what_becomes_unreadable_and_increase_is_the_other_call():
    down = plan_retention(summary(retention_hours=168), 24)
    assert [c.operation for c in down.calls] == ["DecreaseStreamRetentionPeriod"]
    assert "records older than 24 h become unreadable" in down.render()
    assert "between 24 and 168 hours ago" in down.render()
    up = plan_retention(summary(retention_hours=24), 72)
    assert [c.operation for c in up.calls] == ["IncreaseStreamRetentionPeriod"]
    assert plan_retention(summary(retention_hours=72), 72).is_noop
    assert plan_retention(summary(status="UPDATING"), 24 * 5).refusal is not None


def test_a_mode_switch_inside_24_hours_of_the_last_is_refused_and_allowed_after():
    now = 1_000_000.0
    state = summary(mode="ON_DEMAND")
    refused = plan_mode(state, "PROVISIONED", shards=None, recent_switches=[now - 23 * HOUR], now=now)
    assert refused.refusal and "one switch per 24 hours" in refused.refusal
    allowed = plan_mode(state, "PROVISIONED", shards=None, recent_switches=[now - 25 * HOUR], now=now)
    assert allowed.ok and [c.operation for c in allowed.calls] == ["UpdateStreamMode"]
    assert "keeps its 4 open shards" in allowed.render()


def test_to_provisioned_with_a_shard_count_rescales_after_the_switch():
    plan = plan_mode(summary(mode="ON_DEMAND"), "PROVISIONED", shards=6, recent_switches=[], now=0.0)
    assert [c.operation for c in plan.calls] == ["UpdateStreamMode", "UpdateShardCount"]
    assert plan.calls[1].parameters["TargetShardCount"] == 6
    assert plan_mode(summary(), "PROVISIONED", shards=None, recent_switches=[], now=0.0).is_noop


def test_delete_lists_what_is_lost_and_refuses_with_consumers_unless_enforced():
    consumers = ["analytics", "audit"]
    refused = plan_delete(summary(), consumers=consumers, total_shards=6, enforce_consumer_deletion=False)
    assert refused.refusal and "--enforce-consumer-deletion" in refused.refusal
    text = refused.render()
    assert "up to 48 h" in text and "4 open shards (6 with closed ones" in text and "analytics, audit" in text
    assert plan_delete(summary(), consumers=consumers, total_shards=4, enforce_consumer_deletion=True).ok


def test_create_and_encryption_plans():
    assert plan_create("x", shards=None, on_demand=False, retention_hours=None, exists=True).refusal
    plan = plan_create("x", shards=3, on_demand=False, retention_hours=48, exists=False)
    assert [c.operation for c in plan.calls] == ["CreateStream", "IncreaseStreamRetentionPeriod"]
    assert plan_encryption(summary(), None, current_key=None).is_noop
    assert plan_encryption(summary(encryption="KMS"), "alias/aws/kinesis", current_key="alias/aws/kinesis").is_noop
    on = plan_encryption(summary(), "alias/mine", current_key=None)
    assert on.calls[0].operation == "StartStreamEncryption" and "billed by KMS" in on.render()
