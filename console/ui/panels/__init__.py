"""Tabs of the console (each renders state it is given and posts typed messages)."""
