"""Plans for today's settings: AWS's rules refuse before any call (BadInput, exit 2), a plan says what
changes, and the action log tells since when a stream has been AUTO."""

from __future__ import annotations

import pytest

from console.errors import BadInput
from console.lifecycle.settings import (
    check_policy,
    parse_distribution,
    parse_tag,
    plan_account,
    plan_distribution,
    plan_max_record_size,
    plan_tag,
    plan_warm_throughput,
    switched_to_auto_at,
)
from console.topology.model import StreamSummary

ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/s"


def summary(**changes) -> StreamSummary:
    values = dict(
        name="s", status="ACTIVE", mode="ON_DEMAND", open_shard_count=4, retention_hours=24, encryption="NONE", arn=ARN
    )
    values.update(changes)
    return StreamSummary(**values)


def test_record_size_plans_raise_lower_or_do_nothing():
    raised = plan_max_record_size(summary(), 10240)
    assert raised.calls[0].parameters == {"StreamARN": ARN, "MaxRecordSizeInKiB": 10240}
    assert raised.summary == "raise the record size limit from 1 MiB to 10 MiB"
    lowered = plan_max_record_size(summary(max_record_size_kib=2048), 1024)
    assert "refused from now on" in lowered.consequences[0]
    assert plan_max_record_size(summary(), 1024).is_noop
    assert plan_max_record_size(summary(status="UPDATING"), 2048).refusal


def test_warm_throughput_needs_on_demand_and_the_commitment():
    with pytest.raises(BadInput, match="applies to on-demand streams"):
        plan_warm_throughput(summary(mode="PROVISIONED"), 100, commitment=None)
    with pytest.raises(BadInput, match="needs the account's On-demand Advantage"):
        plan_warm_throughput(summary(), 100, commitment="DISABLED")
    with pytest.raises(BadInput, match="--mibps must be from 0 to 10,240"):
        plan_warm_throughput(summary(), 10241, commitment="ENABLED")
    plan = plan_warm_throughput(summary(), 100, commitment="ENABLED_UNTIL_EARLIEST_ALLOWED_END")
    assert plan.calls[0].parameters["WarmThroughputMiBps"] == 100


def test_distribution_plans_warn_what_auto_breaks_and_refuse_provisioned():
    assert parse_distribution("auto") == "AUTO" and parse_distribution("partition-key") == "USER_PARTITION_KEY"
    with pytest.raises(BadInput):
        parse_distribution("random")
    with pytest.raises(BadInput, match="AUTO record distribution applies to on-demand streams"):
        plan_distribution(summary(mode="PROVISIONED"), "AUTO")
    text = plan_distribution(summary(), "AUTO").render()
    for broken in ("per-key order is gone", "key-based placement stops", "key-space what-ifs"):
        assert broken in text
    back = plan_distribution(summary(record_distribution="AUTO"), "USER_PARTITION_KEY")
    assert "records written under AUTO stay" in back.render()
    assert plan_distribution(summary(mode="PROVISIONED"), "USER_PARTITION_KEY").is_noop


def test_tags_and_policies_are_checked_before_any_call():
    assert parse_tag("team=a b") == ("team", "a b") and parse_tag("empty=") == ("empty", "")
    for bad in ("novalue", "=v", "aws:x=1", "k" * 129 + "=v", "k=" + "v" * 257, "k=\x1b[31m"):
        with pytest.raises(BadInput):
            parse_tag(bad)
    existing = {f"k{n}": "v" for n in range(49)}
    assert plan_tag(summary(), {"k0": "v"}, existing).is_noop
    with pytest.raises(BadInput, match="would have 51 tags"):
        plan_tag(summary(), {"x": "1", "y": "2"}, existing)
    for bad, reason in (
        ("{", "is not JSON"),
        ("[]", "must be a JSON object"),
        ("{}", "has no Statement"),
        ('{"Statement": [{"Effect": "Allow", "Principal": "*"}]}', "names no Action"),
        ('{"Statement": {"Effect": "Allow", "Action": "kinesis:*"}}', "names no Principal"),
    ):
        with pytest.raises(BadInput, match=reason):
            check_policy(bad)
    assert check_policy('{"Statement": {"Effect": "Deny", "Action": "*", "Principal": "*"}}').startswith('{"Statement"')


def test_account_plan_and_the_auto_since_line():
    on = plan_account({"status": "DISABLED", "earliest_allowed_end_at": None}, True)
    assert on.calls[0].parameters == {"MinimumThroughputBillingCommitment": {"Status": "ENABLED"}}
    assert plan_account({"status": "ENABLED_UNTIL_EARLIEST_ALLOWED_END"}, False).is_noop
    log = [
        {
            "action": "stream distribution",
            "stream": "s",
            "backend": "b",
            "target": "AUTO",
            "time": "2026-11-25T13:04:05.123+00:00",
        },
        {"action": "stream mode", "stream": "s", "backend": "b"},
    ]
    assert switched_to_auto_at(log, "s", "b") == "2026-11-25 13:04 UTC"
    assert switched_to_auto_at(log, "s", "other backend") is None
    assert switched_to_auto_at([*log, dict(log[0], target="USER_PARTITION_KEY")], "s", "b") is None
