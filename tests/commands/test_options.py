"""A command's typed options are read from what argparse parsed: the action's own options by name,
the rest at their defaults."""

import pytest

from console.cli import build_parser
from console.commands._options import options_from
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
