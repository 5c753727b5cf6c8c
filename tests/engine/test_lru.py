"""Specification of the least-recently-used mapping (diffusion_infill.engine.lru) that the suggestion cache
and the server's fix results keep their entries in."""

from diffusion_infill.engine.lru import Lru


def filled(size: int, *keys: str) -> Lru[str, int]:
    lru: Lru[str, int] = Lru(size)
    for value, key in enumerate(keys):
        lru.put(key, value)
    return lru


def test_the_oldest_entry_goes_first_when_the_size_is_passed():
    lru = filled(2, "a", "b", "c")

    assert [key for key, _ in lru.newest_first()] == ["c", "b"]
    assert lru.peek("a") is None and len(lru) == 2


def test_storing_a_key_again_makes_it_the_newest_with_its_new_value():
    lru = filled(2, "a", "b", "a", "c")

    assert list(lru.newest_first()) == [("c", 3), ("a", 2)]


def test_get_makes_an_entry_the_newest_and_peek_leaves_the_order_alone():
    touched, looked_at = filled(2, "a", "b"), filled(2, "a", "b")

    assert touched.get("a") == 0 and looked_at.peek("a") == 0
    touched.put("c", 2)
    looked_at.put("c", 2)

    assert touched.peek("a") == 0 and touched.peek("b") is None
    assert looked_at.peek("a") is None and looked_at.peek("b") == 1


def test_a_missing_key_gives_none():
    lru = filled(2, "a")

    assert lru.get("z") is None and lru.peek("z") is None and len(lru) == 1


def test_forget_where_drops_only_the_picked_keys_and_clear_drops_all():
    lru = filled(4, "x1", "y1", "x2")

    lru.forget_where(lambda key: key.startswith("x"))
    assert list(lru.newest_first()) == [("y1", 1)]
    lru.clear()
    assert len(lru) == 0 and list(lru.newest_first()) == []
