"""A stream's life: AWS's rules for names, shard counts, retention, capacity mode and encryption,
checked before any call, and the plans (preview, calls, consequences) the commands and the console
show before creating, changing or deleting a stream, and (console.lifecycle.actions) the one place
each change to a stream, its consumers, its channels or the account is prepared and run. No I/O of
its own: the caller hands in the backend, or the stream's state."""
