"""Pausing, resuming and replaying a Lambda event source mapping on the embedded server's Lambda,
over HTTP: each change planned, confirmed, made and logged; a replay's new mapping starts at the point
with the old one's settings, the old one disabled."""

from __future__ import annotations

import json

import pytest

from console.reshard.actionlog import ActionLog
from tests.commands.test_cli_reshard import kconsole, one_clean_line
from tests.consumers.kcl_tables import aws_client


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KCONSOLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(tmp_path / "config.toml"))


async def test_disable_enable_and_replay_a_mapping_each_logged(capsys, local_kinesis, make_stream):
    url = ["--endpoint-url", local_kinesis.endpoint_url, "--region", "us-east-1"]
    stream = await make_stream(shards=2)
    code, out, err = await kconsole(capsys, "demo", "readers", stream, *url)
    assert code == 0, err
    async with aws_client("lambda", local_kinesis.endpoint_url) as lam:
        mappings = (await lam.list_event_source_mappings())["EventSourceMappings"]
        mine = next(m for m in mappings if m["EventSourceArn"].endswith(f"stream/{stream}"))
        uuid = mine["UUID"]

        code, out, err = await kconsole(capsys, "readers", "disable", stream, "--mapping", uuid, *url)
        assert code == 1 and "without confirmation" in one_clean_line(err)  # no TTY, no --yes
        assert (await lam.get_event_source_mapping(UUID=uuid))["State"] == "Enabled"
        code, out, err = await kconsole(capsys, "readers", "disable", stream, "--mapping", uuid, "--yes", *url)
        assert code == 0 and (await lam.get_event_source_mapping(UUID=uuid))["State"] == "Disabled", err
        code, out, err = await kconsole(capsys, "readers", "enable", stream, "--mapping", uuid, "--yes", *url)
        assert code == 0 and (await lam.get_event_source_mapping(UUID=uuid))["State"] == "Enabled", err

        code, out, err = await kconsole(
            capsys, "readers", "replay", stream, "--mapping", uuid, "--from=-5m", "--print", *url
        )
        assert code == 0 and out.count("aws lambda ") == 2 and "--no-enabled" in out and "AT_TIMESTAMP" in out
        assert len((await lam.list_event_source_mappings())["EventSourceMappings"]) == len(mappings)  # printed only
        code, out, err = await kconsole(
            capsys, "readers", "replay", stream, "--mapping", uuid, "--from=-5m", "--yes", "--json", *url
        )
        assert code == 0, err
        new_uuid = json.loads(out)["made"][0]["new_mapping"]
        new = await lam.get_event_source_mapping(UUID=new_uuid)
        assert new["StartingPosition"] == "AT_TIMESTAMP" and new["BatchSize"] == mine["BatchSize"]
        assert new["EventSourceArn"] == mine["EventSourceArn"] and new["FunctionArn"] == mine["FunctionArn"]
        assert (await lam.get_event_source_mapping(UUID=uuid))["State"] == "Disabled"

    entries = ActionLog.default().entries()
    intents = [e["operation"] for e in entries if e.get("kind") == "intent"]
    assert intents == [
        "UpdateEventSourceMapping",
        "UpdateEventSourceMapping",
        "CreateEventSourceMapping",
        "UpdateEventSourceMapping",
    ]
    assert all(e["outcome"] == "applied" for e in entries if e.get("kind") == "outcome")

    other = await make_stream(shards=1)
    for argv, expected in (
        (["readers", "disable", other, "--mapping", uuid], f"not {other}"),
        (["readers", "disable", stream, "--mapping", "00000000-0000-0000-0000-000000000000"], "no Lambda event"),
        (["readers", "replay", stream, "--mapping", uuid], "--from WHEN"),
        (["readers", "replay", stream, "--mapping", uuid, "--from", "2999-01-01T00:00:00Z"], "in the future"),
        (["readers", "disable", stream], "--mapping UUID"),
    ):
        code, out, err = await kconsole(capsys, *argv, "--yes", *url)
        assert code == 2 and expected in one_clean_line(err), (argv, err)
