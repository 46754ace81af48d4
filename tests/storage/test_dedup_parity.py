"""One dedup engine, two indexes: the crawl's Redis index gives the very verdicts of the in-memory one."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.accuracy.corpus import data_dir  # noqa: E402
from benchmarks.accuracy.pairs import Config, build  # noqa: E402
from fingerprint.neardup import DedupDoc, DedupEngine  # noqa: E402
from storage.dedup_index import RedisDedupIndex  # noqa: E402

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
            store.save_page({"_id": src.page_id, "url": f"t:{source_id}", "text": src.text})
        variant = DedupDoc.of(store.new_page_id(), p.variant)
        a, b = _verdict(memory, variant), _verdict(redis_engine, variant)
        counted[a[1]] = counted.get(a[1], 0) + 1
        if a != b:
            differ.append((p.pair_id, p.disguise, a, b))
    assert not differ, differ[:5]
    assert len(ls.pairs) >= 300
    assert {"exact", "simhash", "passages", None} <= set(counted), counted  # every step decided something
