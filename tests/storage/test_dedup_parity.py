"""One dedup engine, two indexes: the crawl's Redis index gives the very verdicts of the in-memory one."""
from __future__ import annotations

import pytest

from benchmarks.accuracy.corpus import data_dir
from benchmarks.accuracy.pairs import Config, build
from fingerprint.neardup import DedupDoc, DedupEngine
from storage.dedup_index import RedisDedupIndex

BOTH = pytest.mark.parametrize("redis_mode", ["single", "cluster"])  # one Redis, and a 3-master Redis Cluster


def _verdict(engine: DedupEngine, doc: DedupDoc) -> tuple:
    v = engine.decide(doc)
    if v.kind == "new":
        engine.forget(doc)
    return v.kind, v.method, v.distance, None if v.coverage is None else round(v.coverage, 6)


@pytest.mark.slow
@BOTH
def test_memory_and_redis_indexes_give_every_verdict_alike(store):
    try:
        ls = build(Config(5, 5, 20), data_dir(None))
    except FileNotFoundError as exc:
        pytest.skip(f"shared data missing: {exc}")
    memory, redis_engine = DedupEngine(), DedupEngine(index=RedisDedupIndex(store))
    source_id, src = None, None
    differ, counted = [], {}
    for p in ls.pairs:
        if p.source.id != source_id:  # the benchmark's protocol: the library holds the pair's source alone
            for engine in (memory, redis_engine):
                if src is not None:
                    engine.forget(src)
            source_id, src = p.source.id, DedupDoc.of(store.new_page_id(), p.source.text)
            for engine in (memory, redis_engine):
                assert engine.decide(src).kind == "new"
            store.save_page({"_id": src.page_id, "url": f"t:{source_id}", "text": src.text,
                             "content_hash": src.content_hash, "simhash": src.simhash})   # as the crawl saves it
        variant = DedupDoc.of(store.new_page_id(), p.variant)
        a, b = _verdict(memory, variant), _verdict(redis_engine, variant)
        counted[a[1]] = counted.get(a[1], 0) + 1
        if a != b:
            differ.append((p.pair_id, p.disguise, a, b))
    assert not differ, differ[:5]
    assert len(ls.pairs) >= 300
    assert {"exact", "simhash", "passages", None} <= set(counted), counted  # every step decided something


def test_a_claimed_page_is_verifiable_before_it_reaches_mongodb(store, news):
    """The passage step reads a claimed page's text from its claim: a copy is caught while the original's
    save is still on its way (a slow or restarting MongoDB), and the text goes once the page is saved."""
    import random

    engine = DedupEngine(index=RedisDedupIndex(store))
    story, filler = news[25]["text"], news[26]["text"]
    rng, edited = random.Random(1), list(story)
    for _ in range(len(story) // 50):   # a fifth of the text deleted or replaced: SimHash misses it
        i = rng.randrange(len(edited))
        edited[i:i + 10] = list(filler[i % 500:i % 500 + 10]) if rng.random() < 0.5 else []
    original = DedupDoc.of(store.new_page_id(), story)
    assert engine.decide(original).kind == "new"          # claimed, not saved
    copy = engine.decide(DedupDoc.of(store.new_page_id(), "".join(edited)))
    # passages cover 0.750 of both before issue 27, 0.747 with synonyms canonicalised: either passage verdict
    assert (copy.kind, copy.by_passages, copy.original) == ("near", True, original.page_id)
    assert store.get_page(original.page_id) is None, "the text came from the claim: MongoDB has no page yet"
    key = f"{store.config.key_prefix}tx:{original.page_id}"
    assert store.redis.ttl(key) > 3600
    store.save_page({"_id": original.page_id, "url": "http://t/original", "text": story})
    assert not store.redis.exists(key)
