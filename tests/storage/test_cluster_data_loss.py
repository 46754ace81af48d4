"""One Redis Cluster node comes back empty while crawlers run (invariant seed 479: cluster, redis_wipe).

A node restarted without persistence takes only its own slots' keys; the owner key may live on another node,
so before slot markers (storage/sentinels.py) no crawler noticed: copies of stories whose index entries had
been on that node were kept as new, and passage sketches, re-claimed only when Redis held none at all, stayed
lost. Here the node's keys are deleted the way its restart would, on a real 3-master cluster.
"""
from __future__ import annotations

import pytest

from storage import open_store
from storage.inflight import Flight
from tests.storage.test_storage_faults import crawl, story

pytestmark = pytest.mark.parametrize("redis_mode", ["cluster"])


def wipe_node_of(store, key: str) -> int:
    """Delete every key of this store's prefix on the node that holds `key` (that node restarted empty)."""
    node = store.redis.get_node_from_key(key)
    conn = store.redis.get_redis_connection(node)
    keys = list(conn.scan_iter(match=store.config.key_prefix + "*", count=1000))
    pipe = conn.pipeline(transaction=False)
    for key in keys:   # one by one: a node refuses a DEL of keys in several slots
        pipe.delete(key)
    return sum(pipe.execute())


def block0_copy(store, fp: int) -> int:
    """A fingerprint within k = 3 bits of `fp` that shares only its first block table with it."""
    for shift, _ in store.index.layout[1:]:
        fp ^= 1 << shift
    return fp


def with_block0_of(store, fp: int, other: int) -> int:
    """`other` with `fp`'s first block: both pages' first block tables are one table, on one node."""
    shift, width = store.index.layout[0]
    mask = ((1 << width) - 1) << shift
    return (other & ~mask) | (fp & mask)


def test_a_node_back_empty_is_met_before_a_copy_is_decided(store_config):
    """The block tables' scripts read their slot's marker: a check on a slot that came back empty re-fills the
    index from MongoDB first (a saved story's copy is found); another crawler's page in flight is put back by
    its own next save, and a page found new meanwhile is decided again by the spool replay."""
    a, b = open_store(store_config), open_store(store_config)
    try:
        h0, fp0 = story(0)
        assert crawl(a, "p0", h0, fp0) == "new"                            # saved before the loss
        late, fp1 = b.new_page_id(), with_block0_of(a, fp0, story(1)[1])   # B: indexed, its save on its way
        assert b.check_and_insert(late, story(1)[0], fp1).kind == "new"
        b.inflight.add(late, Flight(story(1)[0], fp1))
        assert wipe_node_of(a, a.index._ckeys(fp0)[0]) > 0
        assert crawl(a, "c0", story(10)[0], block0_copy(a, fp0)) == "near"   # found again: re-filled first
        assert a.duplicates.find_one({"url": "http://t/c0"})["original_id"] == a.page_by_url("http://t/p0")["_id"]
        assert a.index.lost_slots() == 0
        assert crawl(a, "c1", story(11)[0], block0_copy(a, fp1)) == "new"   # B's page not back yet: provisional
        assert {e["args"]["page_id"] for p in a.spool.pending() + [a.spool._path] for e in a.spool.entries(p)
                if e["op"] == "recheck"} == {a.page_by_url("http://t/c1")["_id"]}
        b.save_page({"_id": late, "url": "http://t/late", "content_hash": story(1)[0], "simhash": fp1,
                     "text": "late", "site": "t"})                           # B's save meets the loss
        assert crawl(a, "c2", story(12)[0], fp1 ^ 1 << 40) == "near"
        assert a.duplicates.find_one({"url": "http://t/c2"})["original_id"] == late
    finally:
        a.close()
        b.close()
    st = open_store(store_config)                                           # the next run replays c1
    try:
        assert sorted(p["url"] for p in st.pages.find()) == ["http://t/late", "http://t/p0"]
        dups = {d["url"]: d["original_id"] for d in st.duplicates.find()}
        assert dups == {"http://t/c0": st.page_by_url("http://t/p0")["_id"], "http://t/c1": late,
                        "http://t/c2": late}
        assert st.spool.count() == 0
    finally:
        st.drop_all()
        st.close()


def test_passage_sketches_a_node_lost_are_claimed_again(store_config):
    """A passage claim on a bucket whose slot came back empty re-fills the sketches from MongoDB (all of them:
    Redis still holds others, so "none left" cannot tell) and claims again: the earlier page is reported."""
    a = open_store(store_config)
    try:
        values = [(0x1234 << 48) | i for i in range(1, 40)]        # one bucket: the top 16 bits
        first = a.new_page_id()
        assert a.claim_sketch(first, values, 10 ** 6)[1] == []
        a.save_page({"_id": first, "url": "http://t/first", "content_hash": story(30)[0], "simhash": story(30)[1],
                     "text": "first", "site": "t", "sketch": values})
        key = a.sketches._buckets(values)[0][0]
        assert wipe_node_of(a, key) > 0
        _, others = a.claim_sketch(a.new_page_id(), values[:30], 10)
        assert [(o, n) for o, n, _ in others] == [(first, 30)]
        assert a.index.lost_slots() == 0
    finally:
        a.drop_all()
        a.close()


def test_a_page_in_flight_gets_back_its_sketch_and_date_though_its_simhash_survived(store_config):
    """B's page in flight keeps its SimHash entries (other slots) but loses its passage claim and its date to
    the node that came back empty: B's re-fill puts both back, so another crawler's passage copy finds it and
    reads its date (the earliest-published rule). Before, only pages whose SimHash was gone were re-claimed."""
    from storage.dedup_index import date_key

    a, b = open_store(store_config), open_store(store_config)
    try:
        values = [(0x4321 << 48) | i for i in range(1, 40)]        # one bucket: the top 16 bits
        page, (h, fp) = b.new_page_id(), story(40)
        assert b.check_and_insert(page, h, fp).kind == "new"
        assert b.claim_sketch(page, values, 10 ** 6)[1] == []
        b.redis.set(date_key(b, page), "2024-05-01")
        b.inflight.add(page, Flight(h, fp, tuple(values), None, "2024-05-01"))
        key = b.sketches._buckets(values)[0][0]
        assert b.redis.get_node_from_key(key) != b.redis.get_node_from_key(b.index._ckeys(fp)[0])
        assert wipe_node_of(b, key) > 0
        assert b.check_and_insert(b.new_page_id(), *story(41)).kind == "new"    # B meets the loss: re-fills
        _, others = a.claim_sketch(a.new_page_id(), values[:30], 10)
        assert [(o, n) for o, n, _ in others] == [(page, 30)]
        assert a.redis.get(date_key(a, page)) == b"2024-05-01"
    finally:
        a.drop_all()
        a.close()
        b.close()
