"""The embedded local Kinesis: moto's server application, fixed where it departs from AWS, served by
waitress in a process of its own (`--local`) or in the foreground (`kconsole local serve`).

By job: main (the server and its process), supervision (the child kconsole starts, watches and
restarts), moto_compat (every patch of moto, listed and applied in the server's process): fixes
(moto's Kinesis defects), today and channels (today's API, with accounts and validation beside
them), cloudwatch_index (GetMetricData from an index), records (how a record is stored); short_path
(the hot calls answered without Flask) and store_heap (the server's heap kept as a store's).

The client reaches this package only through console.backend.launcher; nothing here imports the
client (tests/test_architecture.py checks both).
"""
