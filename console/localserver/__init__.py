"""The embedded local Kinesis: moto's server application, fixed where it departs from AWS, served by
waitress in a process of its own (`--local`) or in the foreground (`kconsole local serve`).

By job: main (the server and its process), supervision (the child kconsole starts, watches and
restarts), moto_compat (moto's fixes, applied in the server's process), short_path (the hot calls
answered without Flask), store_heap (the server's heap kept as a store's).

The client reaches this package only through console.backend.launcher; nothing here imports the
client (tests/test_architecture.py checks both).
"""
