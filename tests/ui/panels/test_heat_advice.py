"""The Heat tab's advice for a dominant key, as heat gives it."""

from __future__ import annotations


def test_the_heat_tab_advises_write_sharding_only_on_a_hot_shard():
    """The Heat tab's line for a dominant key follows heat's rule (needs_write_sharding): a shard at
    99.5% of its limit gets "write-shard it", one at 10% does not."""
    from console.ui.panels.heat_text import top_keys_text
    from tests.ui.test_ui_snapshots import heat_snapshot

    shards = {shard.peak_utilisation: shard for shard in heat_snapshot().shards}
    assert "write-shard it" in str(top_keys_text(shards[0.995], "orders"))
    quiet = str(top_keys_text(shards[0.1], "orders"))
    assert "write-shard it" not in quiet and "a split cannot divide one key" in quiet, quiet
