"""A stream's life: AWS's rules for names, shard counts, retention, capacity mode and encryption,
checked before any call, and the plans (preview, calls, consequences) the commands and the console
show before creating, changing or deleting a stream. No I/O: the caller brings the stream's state."""
