"""EncoderCache bookkeeping with fake entries (no model)."""

from __future__ import annotations

from mmrag.generate.encoder_cache import EncoderCache, EncoderCacheKey


def key(name: str, **kw: str) -> EncoderCacheKey:
    base = dict(content_hash=name, preprocess="qwen:224x224", model="m", revision="r", dtype="float32")
    base.update(kw)
    return EncoderCacheKey(**base)


def test_hit_miss_and_lru_eviction_by_bytes() -> None:
    cache = EncoderCache(100)
    assert cache.get(key("a")) is None
    assert cache.put(key("a"), "A", 40) and cache.put(key("b"), "B", 40)
    assert cache.get(key("a")) == "A"  # a becomes most recent
    assert cache.put(key("c"), "C", 40)  # evicts b (least recent)
    assert key("b") not in cache and key("a") in cache and key("c") in cache
    s = cache.stats()
    assert (s.hits, s.misses, s.evicted, s.entries, s.bytes_used) == (1, 1, 1, 2, 80)
    assert s.hit_rate == 0.5


def test_every_key_field_separates_entries() -> None:
    cache = EncoderCache(1000)
    cache.put(key("a"), "base", 1)
    for variant in (
        key("a", preprocess="qwen:448x448"),
        key("a", model="other"),
        key("a", revision="r2"),
        key("a", dtype="bfloat16"),
        key("b"),
    ):
        assert cache.get(variant) is None
        assert variant.digest() != key("a").digest()
    assert key("a").digest() == key("a").digest()


def test_pinned_entries_are_not_evicted_and_oversized_puts_are_refused() -> None:
    cache = EncoderCache(100)
    cache.put(key("a"), "A", 60, pin=True)
    assert not cache.put(key("b"), "B", 60)  # only 40 free, a is pinned
    assert cache.stats().rejected == 1
    assert not cache.put(key("huge"), "H", 101)
    cache.unpin(key("a"))
    assert cache.put(key("b"), "B", 60)
    assert key("a") not in cache and cache.stats().evicted == 1


def test_get_pin_protects_until_unpin() -> None:
    cache = EncoderCache(100)
    cache.put(key("a"), "A", 50)
    assert cache.get(key("a"), pin=True) == "A"
    cache.put(key("b"), "B", 50)
    assert not cache.put(key("c"), "C", 60)  # a pinned, b alone cannot make room
    cache.unpin(key("a"))
    assert cache.put(key("c"), "C", 60)


def test_zero_capacity_caches_nothing_and_clear_keeps_counters() -> None:
    assert not EncoderCache(0).put(key("a"), "A", 1)
    cache = EncoderCache(10)
    cache.put(key("a"), "A", 5)
    cache.get(key("a"))
    cache.clear()
    assert cache.stats().entries == 0 and cache.stats().hits == 1
