"""The balanced key tree: explicit hash keys handed out so that every shard range, at every depth,
gets its fair share (`tree`), the closed-form batch arithmetic behind `next_keys` (`batch`) and the
balance report (`balance`)."""

from console.keyspace.keytree.balance import BalanceReport, Imbalance, LevelFill
from console.keyspace.keytree.tree import KeyTree

__all__ = ["BalanceReport", "Imbalance", "KeyTree", "LevelFill"]
