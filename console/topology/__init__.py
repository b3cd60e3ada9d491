"""What a stream looks like: the plain shard and stream-summary model, the cached shard map (its
INVALID/UPDATING/READY states, invalidation and TTL) and the parent/child lineage of shards."""
