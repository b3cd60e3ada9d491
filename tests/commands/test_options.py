"""A command's typed options are read from what argparse parsed: the action's own options by name,
the rest at their defaults."""

import pytest

from console.cli import build_parser
from console.commands._options import option_names, options_from
from console.commands.reshard import ReshardOptions
from console.commands.stream import StreamOptions
from console.errors import BadInput


def test_stream_options_hold_what_the_action_parsed_and_defaults_for_the_rest():
    args = build_parser().parse_args(["stream", "tag", "orders", "team=payments", "tier=1", "--wait"])
    options = options_from(StreamOptions, args)
    assert options.stream == "orders" and options.wait
    assert options.tags == [("team", "payments"), ("tier", "1")]
    assert options.keys == [] and options.kms_key is None and not options.on_demand and options.shards is None


def test_an_offline_plan_has_no_stream_to_work_on():
    args = build_parser().parse_args(["plan", "scale", "--shards", "4", "--to", "8"])
    options = options_from(ReshardOptions, args)
    assert (options.action, options.stream, options.shards, options.to) == ("scale", None, 4, 8)
    with pytest.raises(BadInput, match="name a STREAM"):
        _ = options.named_stream


def test_tail_options_are_every_one_the_parser_gives_and_reach_the_reader():
    from dataclasses import fields

    from console.commands.tail import TailCommandOptions, read_options

    args = build_parser().parse_args(
        ["tail", "orders", "--shard", "shardId-1, shardId-2", "--shard", "shardId-1", "--key", "k", "--last", "5m"]
    )
    assert {field.name for field in fields(TailCommandOptions)} <= set(vars(args))  # no option left at a default
    options = options_from(TailCommandOptions, args)
    assert (options.stream, options.partition_key, options.last) == ("orders", "k", "5m")
    reading = read_options(options, args)
    assert reading.shard_ids == ("shardId-1", "shardId-2") and reading.partition_key == "k"
    assert reading.end.moment is not None  # --last reads up to now
    with pytest.raises(BadInput, match="--shard needs a shard ID"):
        read_options(options_from(TailCommandOptions, build_parser().parse_args(["tail", "s", "--shard", ","])), args)


# Each command's options object, and a command line of that command: every field names what argparse
# parsed for it (a misspelt field would silently keep its default), but for the fields the command
# derives itself.
COMMAND_OPTIONS = [
    ("console.commands._consumers_options:ConsumersOptions", ["consumers", "orders"], {"stream_name"}),
    ("console.commands.consumers:RecommendOptions", ["recommend", "orders"], set()),
    ("console.commands.readers:ReadersOptions", ["readers", "orders"], set()),
    ("console.commands.keyspace:PredictOptions", ["predict", "k", "--shards", "4", "--stream", "s"], set()),
    ("console.commands.keyspace:KeytreeOptions", ["keytree"], set()),
    ("console.commands.keyspace:SpreadOptions", ["spread", "pk", "--suffixes", "4", "--shards", "4"], {"stream"}),
    ("console.commands.completion:CompletionOptions", ["completion", "bash"], set()),
    ("console.commands.put:PutOptions", ["put", "orders", "--file", "f"], set()),
    ("console.commands.produce:ProduceOptions", ["produce", "orders", "--keys", "1", "--records-per-key", "1"], set()),
    ("console.commands.heat:HeatOptions", ["heat", "orders"], set()),
    ("console.commands.copy:CopyOptions", ["copy", "a", "b", "--last", "1m"], set()),
]


@pytest.mark.parametrize("where, argv, derived", COMMAND_OPTIONS, ids=[c[0].split(":")[1] for c in COMMAND_OPTIONS])
def test_every_option_field_is_what_argparse_parsed(where, argv, derived):
    import importlib

    module, name = where.split(":")
    cls = getattr(importlib.import_module(module), name)
    parsed = vars(build_parser().parse_args(argv))
    missing = set(option_names(cls)) - set(parsed) - derived
    assert not missing, f"{name} has fields argparse never fills: {sorted(missing)}"


def test_consumers_options_read_the_listing_and_the_action_options():
    from console.commands._consumers_options import ConsumersOptions

    args = build_parser().parse_args(["consumers", "rewind", "orders", "--lease-table", "app", "--to=-1h", "--plan"])
    options = options_from(ConsumersOptions, args)
    assert options.words == ["rewind", "orders"] and options.lease_table == "app" and options.to == ["-1h"]
    assert options.plan and options.stream_name == "" and options.undo is None and options.watch is None
