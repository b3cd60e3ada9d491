"""The 128-bit hash-key space: partition key → hash key (MD5, or an explicit hash key), AWS's even
split of the space into shards, the balanced key tree of explicit hash keys, write sharding of a hot
key, and how a set of keys spreads over shards. Pure arithmetic: no I/O, nothing above it."""
