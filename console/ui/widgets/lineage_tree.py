"""Lineage: closed parents above their children, open shards marked.

Fed a `console.lineage.Lineage`. Nodes are kept per shard id and updated in place: a poll that adds
the children of a split only adds their nodes and relabels the parent (now closed). A merge's
child sits under its first listed parent and appears as a reference line under the other one.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from console.lineage import OPEN, Lineage, LineageNode
from console.ui.format import format_share, short_shard_id


def node_label(node: LineageNode) -> Text:
    shard = node.shard
    is_open = node.state == OPEN
    label = Text(no_wrap=True)
    label.append("● " if is_open else "○ ", style="bold green" if is_open else "dim")
    label.append(shard.shard_id, style="bold" if is_open else "dim")
    label.append(f"  {'open' if is_open else 'closed'} {format_share(shard.share)}", style="" if is_open else "dim")
    if len(shard.parents) == 2:
        label.append(f"  merge of {' + '.join(short_shard_id(p) for p in shard.parents)}", style="italic")
    if node.missing_parents:
        label.append(f"  (parent {', '.join(short_shard_id(p) for p in node.missing_parents)} aged out)", style="dim")
    return label


def reference_label(node: LineageNode, home: str) -> Text:
    return Text(f"↳ {node.shard.shard_id}  (merged; shown under {short_shard_id(home)})", style="italic dim",
                no_wrap=True)


class LineageTree(Tree[str]):
    """`node.data` is the shard id."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("stream", id=id)
        self.show_root = False
        self.guide_depth = 3
        self._lineage: Lineage | None = None
        self._shard_nodes: dict[str, TreeNode[str]] = {}  # each shard's main node
        self._pending_select: str | None = None

    def shard_ids_in_tree(self) -> set[str]:
        return set(self._shard_nodes)

    def node_for(self, shard_id: str) -> TreeNode[str] | None:
        return self._shard_nodes.get(shard_id)

    def apply(self, lineage: Lineage) -> None:
        old = self._lineage
        self._lineage = lineage
        if old is None:
            self._rebuild()
            return
        added = [sid for sid in lineage.nodes if sid not in old.nodes]
        removed = [sid for sid in old.nodes if sid not in lineage.nodes]
        # Shards leave the listing when their records age out of retention; the tree's shape then
        # changes at the top, so rebuild (rare). Otherwise only add the new shards' nodes.
        if removed or any(not _home_parent(lineage, sid) and sid not in lineage.roots for sid in added):
            self._rebuild()
            return
        for sid in sorted(added, key=lambda i: lineage.nodes[i].depth):
            self._add(lineage, sid)
        for sid, node in lineage.nodes.items():
            previous = old.nodes.get(sid)
            if previous is not None and (previous.state, previous.shard, previous.missing_parents) != (
                    node.state, node.shard, node.missing_parents):
                self._shard_nodes[sid].set_label(node_label(node))

    def _rebuild(self) -> None:
        lineage = self._lineage
        selected = self.cursor_node.data if self.cursor_node is not None else self._pending_select
        self.clear()
        self._shard_nodes = {}
        if lineage is None:
            return
        for sid in sorted(lineage.nodes, key=lambda i: lineage.nodes[i].depth):
            self._add(lineage, sid)
        if selected:
            self.select_shard(selected)

    def _add(self, lineage: Lineage, shard_id: str) -> None:
        node = lineage.nodes[shard_id]
        home = _home_parent(lineage, shard_id)
        parent_node = self._shard_nodes.get(home) if home else None
        parent = parent_node or self.root
        parent.allow_expand = True
        parent.expand()
        self._shard_nodes[shard_id] = parent.add_leaf(node_label(node), data=shard_id)
        for other in node.shard.parents:
            if other != home and other in self._shard_nodes:
                self._shard_nodes[other].allow_expand = True
                self._shard_nodes[other].expand()
                self._shard_nodes[other].add_leaf(reference_label(node, home or other), data=shard_id)

    def select_shard(self, shard_id: str) -> bool:
        node = self._shard_nodes.get(shard_id)
        if node is None:
            return False
        if self.cursor_node is not None and self.cursor_node.data == shard_id:
            return True
        if node._line < 0:  # lines are laid out on the next render: select then
            self._pending_select = shard_id
            self.call_after_refresh(self._select_pending)
            return True
        self.move_cursor(node)
        return True

    def _select_pending(self) -> None:
        shard_id, self._pending_select = self._pending_select, None
        node = self._shard_nodes.get(shard_id or "")
        if node is not None and node._line >= 0:
            self.move_cursor(node)


def _home_parent(lineage: Lineage, shard_id: str) -> str | None:
    """A merged child is drawn under its first present parent (as console.lineage renders it)."""
    for parent in lineage.nodes[shard_id].shard.parents:
        if parent in lineage.nodes and parent != shard_id:
            return parent
    return None
