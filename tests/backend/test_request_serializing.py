"""The checked-puts client's serializer (console.backend.clients.PlainPutRecordsSerializer) makes the
request botocore's makes: a PutRecords of plain entries written straight to JSON, byte for byte as
botocore writes it; any other request or entry through botocore's serializer itself."""

from __future__ import annotations

import json

import botocore.session
from botocore.serialize import create_serializer
from hypothesis import given
from hypothesis import strategies as st

from console.backend.clients import PlainPutRecordsSerializer

MODEL = botocore.session.get_session().get_service_model("kinesis")
PUT_RECORDS = MODEL.operation_model("PutRecords")


def both(parameters: dict, operation=PUT_RECORDS) -> tuple[dict, dict]:
    botocores = create_serializer("json", include_validation=False)
    ours = PlainPutRecordsSerializer(create_serializer("json", include_validation=False))
    return ours.serialize_to_request(parameters, operation), botocores.serialize_to_request(parameters, operation)


plain_entries = st.lists(
    st.fixed_dictionaries({"Data": st.binary(max_size=300), "PartitionKey": st.text(min_size=1, max_size=256)}),
    min_size=1,
    max_size=40,
)


@given(entries=plain_entries, by_arn=st.booleans())
def test_plain_put_records_is_botocores_request_byte_for_byte(entries, by_arn):
    target = {"StreamARN": "arn:aws:kinesis:eu-west-1:123456789012:stream/s"} if by_arn else {"StreamName": "s"}
    ours, botocores = both({**target, "Records": entries})
    assert ours == botocores


@given(
    entries=plain_entries,
    position=st.integers(min_value=0, max_value=39),
    odd=st.sampled_from(
        [
            {"Data": b"x", "PartitionKey": "k", "ExplicitHashKey": "17"},
            {"Data": "text, not bytes", "PartitionKey": "k"},
            {"Data": b"keyless"},
            {"Data": bytearray(b"x"), "PartitionKey": "k"},
        ]
    ),
)
def test_any_other_entry_leaves_the_request_to_botocore(entries, position, odd):
    entries.insert(min(position, len(entries)), odd)
    ours, botocores = both({"StreamName": "s", "Records": entries})
    assert ours == botocores
    assert json.loads(ours["body"])["Records"][min(position, len(entries) - 1)]["Data"]


def test_other_operations_are_botocores():
    ours, botocores = both({"StreamName": "s", "Data": b"x", "PartitionKey": "k"}, MODEL.operation_model("PutRecord"))
    assert ours == botocores and ours["headers"]["X-Amz-Target"] == "Kinesis_20131202.PutRecord"
