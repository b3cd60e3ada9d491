"""Reading records: the GetRecords mechanics of one shard (`cursor`: pacing, expired iterators, the
end of a closed shard), decoding of what a record holds (KPL aggregates, gzip, JSON) and the tail
reader that follows a stream across shards."""
