"""Keeping the UI loop smooth while a big stream loads: what the app does once at start-up and after
each big listing (tests/benchmarks/bench_console.py measures the stalls these avoid)."""

from __future__ import annotations

import gc


def warm_lazy_imports() -> None:
    """Pay now, at start-up, for what Textual and Rich would otherwise load on first use: the first
    big listing needs a scrollbar (textual.scrollbar), measures non-ASCII text (Rich's unicode width
    tables) and runs work in a thread (the default executor). Loaded during that first paint, they
    stalled the UI loop for tens of ms (tests/benchmarks/bench_console.py)."""
    import concurrent.futures.thread  # noqa: F401

    import textual.scrollbar  # noqa: F401
    from rich.cells import cell_len

    cell_len("…▲▼·⟳▁█")


def settle_heap() -> None:
    """Move every object alive now out of the garbage collector's way.

    A 10k-shard listing (and its lineage) is ~100k long-lived objects; each full collection would
    scan them all and stall the UI loop for 100+ ms. Shards are acyclic, so refcounting frees them
    when a later poll replaces them; only the collector's rescans are saved. Done for big streams only.
    """
    gc.freeze()
