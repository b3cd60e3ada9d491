"""Keeping the UI loop smooth while a big stream loads: what the app does once at start-up and after
each big listing (tests/benchmarks/bench_console.py measures the stalls these avoid)."""

from __future__ import annotations

import asyncio
import gc


def warm_up() -> None:
    """At mount: the lazy imports below, and the default executor's first thread started now."""
    warm_lazy_imports()
    asyncio.get_running_loop().run_in_executor(None, int)


def freeze_startup_garbage() -> None:
    """Collect the start-up garbage (Textual's compose and first layout: ~100k objects) once, before
    the first listing, and freeze the survivors: otherwise the first listing's allocations trigger a
    full collection over all of them in the middle of the load (~50 ms at 10k shards)."""
    gc.collect()
    gc.freeze()


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
