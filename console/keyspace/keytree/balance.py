"""How balanced a key tree is: keys per depth against what the depth can hold, and the position
whose two subtrees differ most. Built by `KeyTree.balance()`, printed by `kconsole keytree`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LevelFill:
    depth: int
    keys: int
    capacity: int

    @property
    def fill(self) -> float:
        return self.keys / self.capacity


@dataclass(frozen=True, slots=True)
class Imbalance:
    """The position whose two subtrees differ most in key count (ties: the shallowest, then lowest)."""

    key: int
    depth: int
    left: int
    right: int

    @property
    def difference(self) -> int:
        return abs(self.left - self.right)


@dataclass(frozen=True, slots=True)
class BalanceReport:
    total_keys: int
    levels: tuple[LevelFill, ...]  # depths 0 .. deepest key, in order
    worst: Imbalance | None  # None for an empty tree

    def to_json(self) -> dict[str, Any]:
        worst = self.worst
        return {
            "total_keys": self.total_keys,
            "levels": [
                {"depth": lv.depth, "keys": lv.keys, "capacity": str(lv.capacity), "fill": lv.fill}
                for lv in self.levels
            ],
            "worst_imbalance": None
            if worst is None
            else {
                "key": str(worst.key),
                "depth": worst.depth,
                "left": worst.left,
                "right": worst.right,
                "difference": worst.difference,
            },
        }
