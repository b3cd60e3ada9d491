"""Who reads a stream and how far behind they are: EFO consumers, KCL lease tables (leases, lag,
state, unleased shards), the barrier a reshard puts in front of lagging consumers, and the scaling
recommendation. Pure logic; I/O goes through an injected backend."""
