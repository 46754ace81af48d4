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
    index._name(e_seq, e_id)
    intent = f"{store_config.key_prefix}ski:{e_id.hex()}"
    index.r.set(intent, b"".join(mine), ex=INTENT_SECONDS)
    (key, fields), *_ = index._buckets(values)
    index._bucket(keys=[key], args=[e_seq.to_bytes(4, "big"), *fields])    # E: its lowest value only
    l_seq, l_others = index.claim("l-page", values, 2)                       # L: every value
    e_result = index._claim_buckets(e_id, e_seq, mine, 2)                    # E finishes
    index.r.delete(intent)
    assert [(o, n) for o, n, s in l_others if s < l_seq] == [("e-page", 8)]
    assert [o for o, _, s in e_result[1] if s < e_result[0]] == []


def test_a_claim_taken_back_reads_as_no_page_at_once(store):
    """A page that saw a claim later taken back (that page was a copy) must not wait for it, nor defer itself."""
    from fingerprint.neardup import DedupDoc
    from storage.dedup_index import RedisDedupIndex

    index = RedisDedupIndex(store)
    a = DedupDoc("a" * 32, "滚滚长江东逝水" * 20, "ab" * 16, 1, (11, 12, 13, 14))
    index.claim_sketch(a, 2)
    index.forget(a)
    assert index.text_of(a.page_id) is None   # before: polled for the page 0.75 s, then LookupUnavailable
    store.save_pages([{"_id": a.page_id, "url": "http://a.example/1", "text": "滚滚长江东逝水"}])
    index.claim_sketch(a, 2)
    index.forget(a)
    assert index.text_of(a.page_id) == "滚滚长江东逝水"   # kept after all: MongoDB answers


@BOTH
def test_records_match_only_at_record_boundaries(store):
    """A value whose compared bytes occur inside another record (straddling a claim number) is no match."""
    a = (0x1234 << 48) | 0xAABBCCDD
    store.claim_sketch("a" * 32, [a, 1 << 40], 1)
    key, = [k for k, _ in store.sketches._buckets([a])]
    blob = store.redis.get(key)
    straddling = (0x1234 << 48) | int.from_bytes(blob[2:6], "big")  # bytes 3..6 of a's record
    assert blob[2:6] != blob[0:4]
    assert store.claim_sketch("b" * 32, [straddling], 1)[1] == []
    assert [o[0] for o in store.claim_sketch("c" * 32, [a], 1)[1]] == ["a" * 32]


@BOTH
def test_a_page_takes_8_bytes_per_value_plus_its_name(store, store_config):
    """Layout: one 8-byte record per value in its bucket string, the page id once in ``sq:``."""
    store.claim_sketch("f" * 32, [(v << 56) | 99 for v in range(8)], 2)
    p = store_config.key_prefix
    buckets = list(store.redis.scan_iter(match=p + "sk:*"))
    assert len(buckets) == 8 and all(len(store.redis.get(k)) == 8 for k in buckets)
    names = [k for k in store.redis.scan_iter(match=p + "sq:*")]
    assert [v for k in names for v in store.redis.hvals(k)] == [bytes.fromhex("f" * 32)]
    store.sketches.unclaim("f" * 32, [(v << 56) | 99 for v in range(8)])
    assert not list(store.redis.scan_iter(match=p + "sk:*"))
    assert not [v for k in names for v in store.redis.hvals(k)]


@BOTH
def test_bulk_load_answers_like_claims(store):
    """add_many (rebuild) writes the claim layout: later claims see the loaded pages, in load order."""
    pages = [(f"{i:032x}", [i * 1000 + v for v in range(8)] + [7 << 60]) for i in range(300)]
    assert store.sketches.add_many(pages, batch=128) == 300
    seq, others = store.claim_sketch("e" * 32, [5000 + v for v in range(4)] + [7 << 60], 2)
    assert [(o, n) for o, n, _ in others] == [(f"{5:032x}", 5)] and others[0][2] < seq
    again = store.claim_sketch(f"{5:032x}", pages[5][1], 2)   # a loaded page keeps its number on a re-claim
    assert again[0] == others[0][2] and [o for o, _, _ in again[1]] == ["e" * 32]
    seen = store.claim_sketch("g" * 32, [7 << 60, 1], 1)[1]
    assert len(seen) == 301 and all(s < seq for o, _, s in seen if o != "e" * 32)


@BOTH
def test_an_old_layout_store_gets_its_sketches_converted_on_open(store, store_config):
    """A store written with layout 3 (sk: hashes of id + decimal claim entries) is rebuilt from MongoDB on
    open: the old buckets go, every kept page's sketch is back in the record layout, in page order."""
    from storage import open_store

    p = store_config.key_prefix
    for i in range(3):
        store.save_page({"_id": f"{i:032x}", "url": f"http://a.example/{i}", "text": "x",
                         "sketch": [2 ** 64 - 1 - i, 1000 + i, 2000 + i, 77]})
    tag = "{ffff}" if store.sketches.cluster else "ffff"
    store.redis.hset(f"{p}sk:{tag}", b"\xff" * 6, b"\x10" + b"\x01" * 16 + b"000000000001")
    store.redis.set(f"{p}layout", "3:k3")
    with open_store(store_config) as st:
        assert st.redis.get(f"{p}layout") == st.index.layout_id.encode()
        assert st.redis.type(f"{p}sk:{tag}") == b"string"
        seq, others = st.claim_sketch("e" * 32, [1001, 2001, 77], 2)
        assert [(o, n) for o, n, _ in others] == [(f"{1:032x}", 3)] and others[0][2] < seq
        assert len(st.claim_sketch("f" * 32, [77], 1)[1]) == 4
