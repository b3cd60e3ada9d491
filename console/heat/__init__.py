"""Which shards and keys are hot: per-second rates and utilisation against the shard write limits
(`rates`, `snapshot`), the live sampler and which shards it reads each second (`rotation`),
heavy-hitter counting of partition keys, the hot-key write-sharding what-if, and the CloudWatch
metrics source."""
