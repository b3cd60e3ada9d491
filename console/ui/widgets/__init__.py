"""Widgets shared by the console's views: the header, the key-space ribbon, the shard table and
the cursor keys the scrolling lists share. Each is small and testable on its own."""
