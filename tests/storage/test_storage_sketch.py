"""The passage-sketch index (third dedup step) on real Redis: claims, order, removal, races, rebuild."""
import threading

import pytest

from storage.connection import redis_client
from storage.redis_index import RedisSketchIndex

BOTH = pytest.mark.parametrize("redis_mode", ["single", "cluster"])  # one Redis, and a 3-master Redis Cluster


@BOTH
def test_claims_see_earlier_pages_with_their_order(store):
    a = store.claim_sketch("a" * 32, [1, 2, 3, 4], 2)
    b = store.claim_sketch("b" * 32, [3, 4, 5, 6], 2)
    c = store.claim_sketch("c" * 32, [4, 7, 8, 9], 2)
    assert a[1] == [] and c[1] == []  # c shares only one value with each
    assert b[1] == [("a" * 32, 2, a[0])] and a[0] < b[0]
    again = store.claim_sketch("a" * 32, [1, 2, 3, 4], 2)  # re-claim (resume): same number, no self-match
    assert again[0] == a[0] and again[1] == [("b" * 32, 2, b[0])]


@BOTH
def test_forget_copy_removes_only_that_page(store):
    store.claim_sketch("x1", [10, 11, 12], 1)
    store.claim_sketch("x2", [10, 11, 12], 1)
    store.sketches.unclaim("x2", [10, 11, 12])
    assert [o[0] for o in store.claim_sketch("x3", [10, 11, 12], 1)[1]] == ["x1"]


@BOTH
def test_two_crawlers_racing_on_copies_never_both_win_or_lose(store, store_config):
    """Threads with their own connections claim 200 pairs of overlapping sketches at once: in each pair
    exactly one claim sees the other as earlier."""
    clients = [redis_client(store.redis_url) for _ in range(2)]
    results: dict[int, list] = {0: [], 1: []}

    def run(side: int) -> None:
        index = RedisSketchIndex(clients[side], store_config.key_prefix)
        for pair in range(200):
            values = [(v << 60) + pair * 100 + v for v in range(8)]  # 8 buckets: 8 slots on a cluster
            seq, others = index.claim(f"p{pair}-{side}", values, 2)
            results[side].append((seq, [o for o in others if o[2] < seq]))

    threads = [threading.Thread(target=run, args=(side,)) for side in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for pair in range(200):
        sees_earlier = [bool(results[side][pair][1]) for side in (0, 1)]
        assert sees_earlier.count(True) == 1, pair


@BOTH
def test_rebuild_restores_sketches_from_mongodb(store):
    store.save_page({"_id": "d" * 32, "url": "http://a.example/1", "text": "x", "sketch": [2 ** 64 - 1, 5, 6]})
    store.sketches.clear()
    store.rebuild_index()
    others = store.claim_sketch("e" * 32, [2 ** 64 - 1, 5], 2)[1]
    assert [o[0] for o in others] == ["d" * 32]


@pytest.mark.parametrize("redis_mode", ["cluster"])
def test_a_page_overtaken_while_claiming_is_still_the_earlier_one(store, store_config):
    """Cluster claims go bucket by bucket: E claims its lowest value, L then claims everything, then E
    finishes. E came first where they share their lowest value, so L (and only L) must see E as earlier,
    although L met E at one value only while claiming (E's intent says they share eight)."""
    from storage.redis_index import INTENT_SECONDS, encode_id

    index = RedisSketchIndex(redis_client(store.redis_url), store_config.key_prefix)
    values = [(v << 60) + 7 for v in range(8)]
    mine = sorted(v.to_bytes(8, "big") for v in values)
    e_id, e_seq = encode_id("e-page"), int(index.r.incr(f"{store_config.key_prefix}skseq"))
    intent = f"{store_config.key_prefix}ski:{e_id.hex()}"
    index.r.set(intent, b"".join(mine), ex=INTENT_SECONDS)
    (key, fields), *_ = index._buckets(values)
    index._bucket(keys=[key], args=[e_id, f"{e_seq:012d}", *fields])       # E: its lowest value only
    l_seq, l_others = index.claim("l-page", values, 2)                       # L: every value
    e_result = index._claim_buckets(e_id, e_seq, mine, 2)                    # E finishes
    index.r.delete(intent)
    assert [(o, n) for o, n, s in l_others if s < l_seq] == [("e-page", 8)]
    assert [o for o, _, s in e_result[1] if s < e_result[0]] == []


def test_a_claim_taken_back_reads_as_no_page_at_once(store):
    """A page that saw a claim later taken back (that page was a copy) must not wait for it, nor defer itself."""
    import time

    from fingerprint.neardup import DedupDoc
    from storage.dedup_index import RedisDedupIndex

    index = RedisDedupIndex(store)
    a = DedupDoc("a" * 32, "滚滚长江东逝水" * 20, "ab" * 16, 1, (11, 12, 13, 14))
    index.claim_sketch(a, 2)
    index.forget(a)
    started = time.monotonic()
    assert index.text_of(a.page_id) is None
    assert time.monotonic() - started < 0.3   # the in-flight poll would wait 0.75 s, then raise
    store.save_pages([{"_id": a.page_id, "url": "http://a.example/1", "text": "滚滚长江东逝水"}])
    index.claim_sketch(a, 2)
    index.forget(a)
    assert index.text_of(a.page_id) == "滚滚长江东逝水"   # kept after all: MongoDB answers
