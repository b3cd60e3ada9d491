"""Every patch the embedded server makes to moto, in one list, applied inside the server's process
(see main). By module:

  fixes             moto 5.2.5's Kinesis defects (routing after a split, the inclusive end key, lost
                    concurrent puts, closed shards' iterators, ListShards' token and filter, sequence
                    numbers, split/merge/rescale, malformed iterators, consumers by name, iterators by
                    ARN, memory, whole-batch checks, reads by bisection, ListStreams paging, DeleteStream
                    with consumers); tests/backend/test_moto_compat.py and test_moto_compat_reads.py
  today             today's Kinesis API that moto predates (AUTO distribution, MaxRecordSizeInKiB, warm
                    throughput, the account's commitment, tags, resource policies, today's summary
                    members); tests/backend/test_moto_compat_today.py
  channels          Create/Describe/List/Update/DeleteChannel; test_moto_compat_today.py
  cloudwatch_index  GetMetricData from an index; tests/backend/test_moto_compat_cloudwatch.py
  readers           the services that read a stream: Lambda event source mappings inert and taking an
                    EFO consumer's ARN, Managed Flink's application states; tests/backend/test_moto_readers.py
  subscribe         SubscribeToShard, which moto lacks, over HTTP/2 on the server's own port (main hands
                    it the connections that open with the HTTP/2 preface; no patch, it reads moto's
                    stream models); tests/backend/test_moto_compat_subscribe.py
  records           (no patch of its own) how fixes, today and the short path store a record

Each test runs against a patched and an unpatched server, asserting the defect (or the missing
operation) is present only in the unpatched one, so an upstream change is noticed. Every server,
patched or not, also lists moto's modules once (cache_module_listing), a speed-up and no fix.
Beyond moto, the server extends one library: main's subclass of waitress's HTTPChannel answers a TLS
hello at once (tests/backend/test_backend.py sends one) and, when patched, hands an HTTP/2 connection
to subscribe.

Everything here runs under one lock per process (records.lock): moto's models are not thread-safe
and the server is threaded.
"""

from __future__ import annotations

from console.localserver.records import keep_heap_as_a_store, lock, new_record, store_records

__all__ = ["apply", "cache_module_listing", "keep_heap_as_a_store", "lock", "new_record", "store_records"]

# The modules of this package that patch moto or work on its internals (its models' private methods
# and members): the only ones, with console.patches for the client, that tests/test_architecture.py
# lets patch a library.
MOTO_MODULES = (
    "console.localserver.moto_compat",
    "console.localserver.fixes",
    "console.localserver.today",
    "console.localserver.channels",
    "console.localserver.cloudwatch_index",
    "console.localserver.records",
    "console.localserver.readers",
    "console.localserver.subscribe",
)

_applied = False


def apply() -> None:
    """Patch moto's Kinesis and CloudWatch in this process; idempotent."""
    global _applied
    with lock():
        if _applied:
            return
        from moto.cloudwatch import models as cloudwatch_models
        from moto.kinesis import models, responses

        from console.localserver import channels, cloudwatch_index, fixes, readers, today

        fixes.patch_shard(models.Shard)
        fixes.untrack(models.Record, models.Shard, models.Stream)
        fixes.patch_stream(models.Stream, models)
        fixes.patch_responses(responses.KinesisResponse, models)
        fixes.patch_backend(models.KinesisBackend)
        today.patch(models, responses)  # after fixes: it wraps the fixed Stream methods
        channels.patch(responses.KinesisResponse)
        cloudwatch_index.patch(cloudwatch_models)
        readers.apply(lock())
        _applied = True


def cache_module_listing() -> None:
    """moto lists its package directory (about 180 stat calls) on every request to route it; the
    listing cannot change while the server runs, so list once. Roughly halves the time per request."""
    from moto import backends

    if getattr(backends.list_of_moto_modules, "kconsole_cached", False):
        return
    modules = tuple(backends.list_of_moto_modules())

    def list_of_moto_modules():
        return iter(modules)

    # A mark on the function itself, so a second call in this process sees the listing cached.
    list_of_moto_modules.kconsole_cached = True  # type: ignore[attr-defined]
    backends.list_of_moto_modules = list_of_moto_modules
