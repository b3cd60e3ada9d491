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
