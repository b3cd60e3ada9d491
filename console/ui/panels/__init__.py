"""The console's tabs: shards, lineage, placement, key tree, producer, tail, heat and consumers.

Each panel renders the state the app gives it and posts typed messages for anything that needs I/O
or the rest of the console; none reaches back into the app."""
