from console.words import counted


def test_one_is_singular_and_the_rest_plural():
    assert [counted(n, "key") for n in (0, 1, 2, 1000)] == ["0 keys", "1 key", "2 keys", "1,000 keys"]
    assert counted(1, "open shard") == "1 open shard" and counted(3, "index", "indices") == "3 indices"
