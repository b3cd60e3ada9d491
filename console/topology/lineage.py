"""Shard lineage: who split or merged into whom, for open and closed shards alike.

Built from a plain list of `Shard` (what ListShards returned within retention, plus any closed
shards the shard map still retains). Parents may be missing: Kinesis stops listing a closed shard
once its records age out of retention, so a child can name a parent we never see. Such shards
become roots and remember the ids they point at (`missing_parents`).

The open shards must tile [0, 2**128-1]; when they do not, the lineage still builds (so the user
can see what is wrong) but `problem` says why and `open_index` is None.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from console.errors import TilingError
from console.keyspace.hashkeys import HashRangeIndex
from console.topology.model import Shard

OPEN = "open"
CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class LineageNode:
    shard: Shard
    state: str  # OPEN | CLOSED
    depth: int  # 0 for roots; 1 + the deepest present parent otherwise
    children: tuple[str, ...]  # in key-space order
    missing_parents: tuple[str, ...]  # parent ids named by the shard but not in the set

    @property
    def shard_id(self) -> str:
        return self.shard.shard_id

    @property
    def share(self) -> float:
        return self.shard.share

    def to_json(self) -> dict[str, Any]:
        document = self.shard.to_json()
        document["state"] = self.state
        document["depth"] = self.depth
        document["children"] = list(self.children)
        return document


@dataclass(frozen=True, slots=True)
class Ownership:
    """Who owns a hash key now, and who owned it before the last reshard that touched it."""

    hash_key: int
    owner: str | None  # None when the open shards do not cover the key
    previous: str | None  # the parent of `owner` whose range held the key, if known


class Lineage:
    """Parent/child links, depth and state for a set of shards. Immutable once built."""

    __slots__ = ("nodes", "roots", "open_index", "problem")

    def __init__(
        self,
        nodes: dict[str, LineageNode],
        roots: tuple[str, ...],
        open_index: HashRangeIndex | None,
        problem: str | None,
    ) -> None:
        self.nodes = nodes
        self.roots = roots
        self.open_index = open_index
        self.problem = problem

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def build(cls, shards: Iterable[Shard], *, open_ids: Iterable[str] | None = None) -> Lineage:
        """`open_ids` overrides which shards count as open. The shard map passes it because a shard
        that vanished from an AT_LATEST listing is closed even though we never saw its ending
        sequence number."""
        by_id: dict[str, Shard] = {}
        for shard in sorted(shards, key=_key_order):
            by_id.setdefault(shard.shard_id, shard)
        open_set = (
            {s.shard_id for s in by_id.values() if s.is_open} if open_ids is None else set(open_ids) & by_id.keys()
        )

        children: dict[str, list[str]] = {shard_id: [] for shard_id in by_id}
        present_parents: dict[str, tuple[str, ...]] = {}
        for shard_id, shard in by_id.items():  # key-space order, so children lists come out sorted
            present = tuple(p for p in dict.fromkeys(shard.parents) if p in by_id and p != shard_id)
            present_parents[shard_id] = present
            for parent in present:
                children[parent].append(shard_id)

        depth = _depths(by_id, present_parents, children)
        nodes = {
            shard_id: LineageNode(
                shard=shard,
                state=OPEN if shard_id in open_set else CLOSED,
                depth=depth[shard_id],
                children=tuple(children[shard_id]),
                missing_parents=tuple(p for p in shard.parents if p not in by_id),
            )
            for shard_id, shard in by_id.items()
        }
        roots = tuple(shard_id for shard_id in by_id if not present_parents[shard_id])
        open_index, problem = _index_open(by_id[i] for i in by_id if i in open_set)
        return cls(nodes, roots, open_index, problem)

    # -- queries ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, shard_id: object) -> bool:
        return shard_id in self.nodes

    def __getitem__(self, shard_id: str) -> LineageNode:
        return self.nodes[shard_id]

    def open_nodes(self) -> list[LineageNode]:
        return [node for node in self.nodes.values() if node.state == OPEN]

    def owner(self, hash_key: int) -> str | None:
        """The open shard whose range holds `hash_key`."""
        if self.open_index is not None:
            return self.open_index.predict(hash_key)
        # Broken tiling: answer only when exactly one open shard holds the key.
        holders = [n.shard_id for n in self.open_nodes() if n.shard.contains(hash_key)]
        return holders[0] if len(holders) == 1 else None

    def owner_before(self, hash_key: int) -> Ownership:
        """The open owner of `hash_key` and the shard that held the key before the owner was created.

        A split child has one parent, which held every key the child holds, so its id is the answer
        even when the parent itself has been trimmed. A merge child has two; only a parent we still
        see can tell which of them held the key.
        """
        owner = self.owner(hash_key)
        if owner is None:
            return Ownership(hash_key, None, None)
        shard = self.nodes[owner].shard
        previous = None
        if len(shard.parents) == 1:
            previous = shard.parents[0]
        else:
            for parent_id in shard.parents:
                parent = self.nodes.get(parent_id)
                if parent is not None and parent.shard.contains(hash_key):
                    previous = parent_id
                    break
        return Ownership(hash_key, owner, previous)

    def ancestors(self, shard_id: str) -> list[str]:
        """Every present ancestor of `shard_id`, nearest first."""
        seen: dict[str, None] = {}
        queue = deque(p for p in self.nodes[shard_id].shard.parents if p in self.nodes)
        while queue:
            current = queue.popleft()
            if current in seen or current == shard_id:
                continue
            seen[current] = None
            queue.extend(p for p in self.nodes[current].shard.parents if p in self.nodes)
        return list(seen)

    # -- presentation -----------------------------------------------------------------------

    def rows(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per shard, in tree order: each parent followed by its descendants."""
        return [self.nodes[shard_id].to_json() for shard_id in self.tree_order()]

    def tree_order(self) -> list[str]:
        """Shard ids depth-first from the roots (key-space order among siblings), each once."""
        order: list[str] = []
        placed: set[str] = set()
        stack = list(reversed(self._tree_roots()))
        while stack:
            shard_id = stack.pop()
            if shard_id not in placed:
                placed.add(shard_id)
                order.append(shard_id)
                stack.extend(reversed(self._placed_children(shard_id)))
        return order

    def tree_json(self) -> list[dict[str, Any]]:
        """Nested form of the tree: each node's dict gets `subtree` with its children's dicts.
        A merged child is nested under its first present parent only; the other parent lists it
        in `children` as usual. Iterative, because reshard chains can be deeper than Python's stack."""
        forest: list[dict[str, Any]] = []
        placed: set[str] = set()
        stack = [(root, forest) for root in reversed(self._tree_roots())]
        while stack:
            shard_id, siblings = stack.pop()
            if shard_id in placed:
                continue
            placed.add(shard_id)
            document = self.nodes[shard_id].to_json()
            document["subtree"] = []
            siblings.append(document)
            stack.extend((child, document["subtree"]) for child in reversed(self._placed_children(shard_id)))
        return forest

    def render_tree(self) -> str:
        """Text tree: roots in key-space order, children indented under their parents.
        A merged child is drawn in full under its first parent and as a reference under the other."""
        lines: list[str] = []
        drawn: set[str] = set()
        # (shard id, indent of its line, branch glyph, indent of its children);
        # a None id is a reference line whose text rides in the last slot.
        stack: list[tuple[str | None, str, str, str]] = []
        for root in reversed(self._tree_roots()):
            stack.append((root, "", "", ""))
        while stack:
            shard_id, prefix, branch, child_prefix = stack.pop()
            if shard_id is None:  # a merged child drawn elsewhere: one reference line
                lines.append(f"{prefix}{branch}{child_prefix}")
                continue
            if shard_id in drawn:
                continue
            drawn.add(shard_id)
            lines.append(f"{prefix}{branch}{_describe(self.nodes[shard_id])}")
            kids = self.nodes[shard_id].children
            pending: list[tuple[str | None, str, str, str]] = []
            for position, child in enumerate(kids):
                last = position == len(kids) - 1
                glyph = "└── " if last else "├── "
                home = self.home_parent(child)
                if home != shard_id or child in drawn:
                    pending.append((None, child_prefix, glyph, f"{child} (merged; shown under {home})"))
                else:
                    pending.append((child, child_prefix, glyph, child_prefix + ("    " if last else "│   ")))
            stack.extend(reversed(pending))
        if self.problem:
            lines.append(f"problem: {self.problem}")
        return "\n".join(lines)

    # -- internals --------------------------------------------------------------------------

    def home_parent(self, shard_id: str) -> str | None:
        """The parent a merged child is drawn under: ParentShardId if present, else the adjacent one."""
        for parent in self.nodes[shard_id].shard.parents:
            if parent in self.nodes and parent != shard_id:
                return parent
        return None

    def _placed_children(self, shard_id: str) -> list[str]:
        return [c for c in self.nodes[shard_id].children if self.home_parent(c) == shard_id]

    def _tree_roots(self) -> list[str]:
        """Real roots, plus one member of any parent cycle (malformed input) so nothing is hidden."""
        roots = list(self.roots)
        reachable: set[str] = set()
        stack = list(roots)
        while stack:
            current = stack.pop()
            if current not in reachable:
                reachable.add(current)
                stack.extend(self._placed_children(current))
        for shard_id in self.nodes:
            if shard_id not in reachable:
                roots.append(shard_id)
                stack = [shard_id]
                while stack:
                    current = stack.pop()
                    if current not in reachable:
                        reachable.add(current)
                        stack.extend(self._placed_children(current))
        return roots


def _key_order(shard: Shard) -> tuple[int, int, str]:
    return (shard.starting_hash_key, shard.ending_hash_key, shard.shard_id)


def _depths(
    by_id: dict[str, Shard], parents: dict[str, tuple[str, ...]], children: dict[str, list[str]]
) -> dict[str, int]:
    """Longest distance from a root, parents first (Kahn's order, no recursion: chains can be long).
    Shards caught in a parent cycle (malformed input) keep depth 0."""
    depth = dict.fromkeys(by_id, 0)
    waiting = {shard_id: len(p) for shard_id, p in parents.items()}
    ready = deque(shard_id for shard_id, count in waiting.items() if count == 0)
    while ready:
        current = ready.popleft()
        for child in children[current]:
            depth[child] = max(depth[child], depth[current] + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return depth


def _index_open(open_shards: Iterable[Shard]) -> tuple[HashRangeIndex | None, str | None]:
    try:
        index = HashRangeIndex.build((s.shard_id, s.starting_hash_key, s.ending_hash_key) for s in open_shards)
    except TilingError as error:
        return None, f"open shards do not tile [0, 2**128-1]: {error}"
    return index, None


def _describe(node: LineageNode) -> str:
    shard = node.shard
    marker = "open  " if node.state == OPEN else "closed"
    text = f"{shard.shard_id}  {marker}  {shard.starting_hash_key}..{shard.ending_hash_key}  {shard.share * 100:.2f}%"
    if node.missing_parents:
        text += f"  (parent {', '.join(node.missing_parents)} not shown)"
    return text
