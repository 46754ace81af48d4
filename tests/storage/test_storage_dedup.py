"""Dedup index: exact/near/new answers, the two-process race, rebuild from MongoDB, purge."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storage.redis_index import LAYOUT, decode_id, encode_id

ROOT = Path(__file__).resolve().parents[2]
BOTH = pytest.mark.parametrize("redis_mode", ["single", "cluster"])  # one Redis, and a 3-master Redis Cluster


def _h(i: int, salt: str = "") -> str:
    import hashlib

    return hashlib.md5(f"{salt}{i}".encode()).hexdigest()


def flip(fp: int, *bits: int) -> int:
    """fp with the given bits flipped."""
    for b in bits:
        fp ^= 1 << b
    return fp


@BOTH
def test_exact_near_new(store):
    a = store.new_page_id()
    fp = 0xFFFF_0000_1234_8000
    assert store.check_and_insert(a, _h(1), fp).kind == "new"
    r = store.check_and_insert(store.new_page_id(), _h(1), fp)  # answered by Redis alone
    assert (r.kind, r.original_id, r.distance) == ("exact", a, 0)
    # same content under another SimHash (fingerprint version change): the owner comes from MongoDB
    store.save_page({"_id": a, "url": "http://t/a", "content_hash": _h(1), "simhash": fp})
    r = store.check_and_insert(store.new_page_id(), _h(1), flip(fp, 60))
    assert (r.kind, r.original_id, r.distance) == ("exact", a, 0)
    for bits in ([0], [0, 17], [5, 33, 63]):  # differences in 1, 2 and 3 different blocks
        r = store.check_and_insert(store.new_page_id(), _h(2, str(bits)), flip(fp, *bits))
        assert (r.kind, r.original_id, r.distance) == ("near", a, len(bits))
    r = store.check_and_insert(store.new_page_id(), _h(3), flip(fp, 1, 2, 3, 4))
    assert r.kind == "new"  # 4 bits away from the first page is beyond k = 3
    # with k=1 a page 2 bits from every stored one is new; the same page again is "unchanged" (idempotent),
    # and the same page with a slightly edited text is "new" again (its stored copy is updated)
    b = store.new_page_id()
    assert store.check_and_insert(b, _h(4), flip(fp, 20, 40), k=1).kind == "new"
    assert store.check_and_insert(b, _h(4), flip(fp, 20, 40)).kind == "unchanged"
    assert store.check_and_insert(b, _h(5), flip(fp, 20, 40, 50)).kind == "new"
    assert store.lookup(_h(99), flip(fp, 20, 40, 41)).kind == "near"
    assert store.index.count() == 3


@BOTH
def test_nearest_wins_and_bad_input(store):
    fp = random.Random(1).getrandbits(64)
    far, near = store.new_page_id(), store.new_page_id()
    store.check_and_insert(far, _h(1), flip(fp, 1, 2, 3, 4, 5, 6))  # 6 bits from fp
    store.check_and_insert(near, _h(2), flip(fp, 40))
    r = store.lookup(_h(3), flip(fp, 1, 2, 3))
    assert (r.original_id, r.distance) == (far, 3)
    r = store.lookup(_h(3), flip(fp, 1, 2, 40))
    assert (r.original_id, r.distance) == (near, 2)
    with pytest.raises(ValueError):
        store.check_and_insert("x", "not-hex", 1)
    with pytest.raises(ValueError):
        store.check_and_insert("x", _h(5), 2**64)


@pytest.mark.parametrize("pid", ["6b02d0a3ae6fe564e73542ce", "0" * 32, "url:http://a/b?c=1", "12345678901",
                                 "~" * 11, "~" * 15, "\0~abc", "ABCDEF0123456789ABCDEF01", "页面", ""])
def test_id_encoding_roundtrip(pid):
    raw = encode_id(pid)
    assert decode_id(raw) == pid
    if len(pid) in (24, 32) and pid.islower():
        assert len(raw) == len(pid) // 2


@BOTH
def test_two_processes_race(store_config, tmp_path):
    """Two real processes check the same stories at the same moment: exactly one original per story."""
    rng = random.Random(7)
    n = 300
    base = [rng.getrandbits(64) for _ in range(n)]
    a_items, b_items = [], []
    for i, fp in enumerate(base):
        a_items.append([f"{i:012d}a" * 2, _h(i), fp])
        if i % 2:  # exact copy (same content hash)
            b_items.append([f"{i:012d}b" * 2, _h(i), fp])
        else:      # near copy: other content, 2 bits away
            b_items.append([f"{i:012d}b" * 2, _h(i, "b"), flip(fp, i % 64, (i + 31) % 64)])
    cfg = json.dumps(dataclasses.asdict(store_config))
    start = time.time() + 3.0
    procs, outs = [], []
    for name, items in (("a", a_items), ("b", b_items)):
        inp, out = tmp_path / f"{name}.in.json", tmp_path / f"{name}.out.json"
        inp.write_text(json.dumps(items))
        outs.append(out)
        procs.append(subprocess.Popen([sys.executable, "-m", "race_worker", cfg, str(inp), str(out), str(start)],
                                      cwd=ROOT, env=worker_env()))
    for p in procs:
        assert p.wait(timeout=120) == 0
    ra, rb = (json.loads(o.read_text()) for o in outs)
    a_won = 0
    for i, (x, y) in enumerate(zip(ra, rb)):
        kinds = sorted([x[1], y[1]])
        assert kinds in (["exact", "new"], ["near", "new"]), (i, x, y)
        winner, loser = (x, y) if x[1] == "new" else (y, x)
        assert loser[2] == winner[0]
        assert loser[1] == ("exact" if i % 2 else "near")
        a_won += winner is x
    print("race: process a won", a_won, "of", n)
    from storage import open_store

    with open_store(store_config) as st:
        assert st.index.count() == n


def worker_env() -> dict:
    """Environment for helper processes: the project first, tests/storage for the helper modules."""
    import os

    return dict(os.environ, PYTHONPATH=str(ROOT / "tests" / "storage"))


def _fill(store, n: int, seed: int = 3) -> list[int]:
    rng = random.Random(seed)
    fps = []
    for i in range(n):
        fp = rng.getrandbits(64)
        if i % 4 == 3:
            fp = flip(fps[-1], rng.randrange(64), rng.randrange(64))
        pid = store.new_page_id()
        r = store.check_and_insert(pid, _h(i, "fill"), fp)
        if r.kind == "new":
            store.save_page({"_id": pid, "url": f"http://s{i % 3}.test/{i}", "site": f"s{i % 3}",
                             "content_hash": _h(i, "fill"), "simhash": fp, "text": f"t{i}"})
        else:
            store.record_duplicate({"url": f"http://s{i % 3}.test/{i}", "original_id": r.original_id,
                                    "method": r.kind, "distance": r.distance, "site": f"s{i % 3}"})
        fps.append(fp)
    return fps


def _answers(store, fps: list[int]) -> list[tuple]:
    rng = random.Random(11)
    out = []
    for i, fp in enumerate(fps):
        q = flip(fp, *rng.sample(range(64), i % 5))
        r = store.lookup(_h(i, "q"), q)
        out.append((r.kind, r.original_id, r.distance))
    out.append(tuple(store.lookup(_h(5, "fill"), 0).__dict__.values()))
    return out


@BOTH
def test_rebuild_after_redis_loss_answers_the_same(store):
    fps = _fill(store, 800)
    before = _answers(store, fps)
    assert sum(a[0] == "near" for a in before) > 300
    count = store.index.count()
    store.index.clear()  # Redis lost its index
    assert store.index.count() is None
    assert all(a[0] == "new" for a in _answers(store, fps)[:-1])
    assert store.rebuild_index() == count
    assert store.index.count() == count
    assert _answers(store, fps) == before
    # reconcile (what open_store does) also repairs a partial loss
    store.index.clear()
    assert store.reconcile_index() == count
    assert _answers(store, fps) == before


@BOTH
def test_purge_site_url_before(store):
    _fill(store, 60)
    c0 = store.counts()
    pages_s1 = store.pages.count_documents({"site": "s1"})
    res = store.purge(site="s1")
    assert res["pages"] == pages_s1 > 0
    assert store.pages.count_documents({"site": "s1"}) == 0
    assert store.duplicates.count_documents({"site": "s1"}) == 0
    assert store.index.count() == c0["pages"] - pages_s1
    for d in store.pages.find({}, {"content_hash": 1}):
        assert store.lookup(d["content_hash"], 0).kind == "exact"
    one = store.pages.find_one({"site": "s0"})
    assert store.purge(url=one["url"])["pages"] == 1
    assert store.lookup(one["content_hash"], 0).kind == "new"
    store.pages.update_many({}, {"$set": {"fetched": dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)}})
    assert store.purge(before="2021-01-01")["pages"] == store_left(c0, res) - 1
    assert store.counts()["pages"] == 0 and store.index.count() == 0
    with pytest.raises(ValueError):
        store.purge()


def store_left(c0: dict, res: dict) -> int:
    """Pages left after the site purge."""
    return c0["pages"] - res["pages"]


@BOTH
def test_index_entry_without_page_is_replaced(store_config):
    """A crawler killed between check_and_insert and save_page must not make the re-fetched page a 'copy'."""
    from storage import open_store

    with open_store(store_config.with_(phantom_seconds=0.0)) as st:
        ghost = st.new_page_id()
        fp = 0x0123_4567_89AB_CDEF
        assert st.check_and_insert(ghost, _h(1), fp).kind == "new"        # killed before save_page
        again = st.new_page_id()
        assert st.check_and_insert(again, _h(1), fp).kind == "new"        # re-fetched: takes its place
        st.save_page({"_id": again, "url": "http://t/1", "content_hash": _h(1), "simhash": fp})
        r = st.check_and_insert(st.new_page_id(), _h(1), fp)
        assert (r.kind, r.original_id) == ("exact", again)
        near_ghost = st.new_page_id()
        st.check_and_insert(near_ghost, _h(2), fp ^ (0xFFFF << 20))
        r = st.check_and_insert(st.new_page_id(), _h(3), fp ^ (0xFFFF << 20) ^ 1)
        assert r.kind == "new" and st.index.count() == 2
    with open_store(store_config) as st:  # default grace period: a page being saved right now is respected
        pid = st.new_page_id()
        st.check_and_insert(pid, _h(9), 99)
        assert st.check_and_insert(st.new_page_id(), _h(9), 99).original_id == pid


def test_old_index_layout_is_rebuilt_on_open(store, store_config):
    from storage import open_store

    _fill(store, 40)
    before = _answers(store, [1, 2**63, 12345])
    store.redis.set(f"{store_config.key_prefix}layout", "0")
    store.redis.set(f"{store_config.key_prefix}sh:0:junk", 1)
    with open_store(store_config) as st:
        assert st.redis.get(f"{store_config.key_prefix}layout") == st.index.layout_id.encode()
        assert not st.redis.exists(f"{store_config.key_prefix}sh:0:junk")
        assert _answers(st, [1, 2**63, 12345]) == before
        assert st.index.count() == st.pages.count_documents({})


@BOTH
@pytest.mark.parametrize("k", range(7))
def test_redis_index_equals_brute_force(store, k, redis_mode):
    """Every k from 0 to 6 is served exactly: the nearest kept fingerprint within k, as a full scan finds it."""
    from storage.redis_index import SimHashIndex

    index = SimHashIndex(store.redis, f"{store.config.key_prefix}bf{k}:", k)
    assert index.cluster == (redis_mode == "cluster")
    rng = random.Random(k)
    bases = [rng.getrandbits(64) for _ in range(12)]
    kept: dict[str, int] = {}
    for i in range(400):
        fp = flip(rng.choice(bases), *rng.sample(range(64), rng.randrange(0, k + 4)))
        res = index.check(f"p{i}", _h(i, f"bf{k}"), fp)
        nearest = min((bin(fp ^ other).count("1") for other in kept.values()), default=99)
        if nearest <= k:
            assert (res.kind, res.distance) == ("near", nearest)
            assert bin(kept[res.original_id] ^ fp).count("1") == nearest
        else:
            assert res.kind == "new"
            kept[f"p{i}"] = fp
    assert 30 < len(kept) < 380, "the stream must exercise both answers"


def test_a_change_of_k_rebuilds_the_index_for_the_new_k(store, store_config):
    from storage import open_store

    fp = 0x0123_4567_89AB_CDEF
    a = store.new_page_id()
    store.save_page({"_id": a, "url": "http://t/k", "content_hash": _h(1, "k"), "simhash": fp})
    store.check_and_insert(a, _h(1, "k"), fp)
    far = flip(fp, 1, 2, 3, 4, 5)
    assert store.lookup(_h(2, "k"), far).kind == "new"
    with open_store(store_config.with_(simhash_k=5)) as st:
        assert st.redis.get(f"{store_config.key_prefix}layout") == f"{LAYOUT}:k5".encode()
        res = st.lookup(_h(2, "k"), far)
        assert (res.kind, res.original_id, res.distance) == ("near", a, 5)
    with pytest.raises(ValueError, match="from 0 to 8"):
        open_store(store_config.with_(simhash_k=9))


@pytest.mark.parametrize("fp", [0, 1, 99_999, 100_000, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1,
                                2**64 - 100_000, 2**64 - 1])
def test_block_members_read_back_exactly_at_the_edges(store, fp):
    """The Lua reads a block-set member (a signed decimal) back as two exact 32-bit halves."""
    from storage.redis_index import SimHashIndex

    index = SimHashIndex(store.redis, f"{store.config.key_prefix}edge:", 3)
    assert index.check("orig", _h(fp, "edge"), fp).kind == "new"
    for bit in (0, 31, 32, 63):
        res = index.check("", _h(bit, "edge-q"), fp ^ (1 << bit) ^ (1 << ((bit + 17) % 64)), insert=False)
        assert (res.kind, res.original_id, res.distance, res.original_simhash) == ("near", "orig", 2, fp)


def _old_id(seconds: float, n: int) -> str:
    """An ObjectId-style page id made `seconds` ago (its age is what tells an unsaved entry lost)."""
    from bson import ObjectId

    when = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=seconds)
    return str(ObjectId(ObjectId.from_datetime(when).binary[:4] + n.to_bytes(8, "big")))


@BOTH
def test_a_second_open_keeps_the_entries_a_live_crawler_is_saving(store, store_config):
    """open_store by a second crawler repairs the index (more entries than MongoDB has pages) while a live
    crawler has pages indexed but not saved yet (younger than phantom_seconds): their exact and SimHash
    entries stay; entries older than that (never saved: lost) are no copy's original."""
    from storage import open_store
    from storage.maintenance import LOST_ALLOWANCE

    rng = random.Random(21)
    live = [(store.new_page_id(), _h(i, "live"), rng.getrandbits(64)) for i in range(LOST_ALLOWANCE + 50)]
    odd = [(f"{i:012d}x" * 2, _h(i, "odd"), rng.getrandbits(64)) for i in range(20)]   # ids of unknown age
    lost = [(_old_id(3600, i), _h(i, "lost"), rng.getrandbits(64)) for i in range(30)]
    for pid, h, fp in live + odd + lost:
        assert store.check_and_insert(pid, h, fp).kind == "new"   # none of them saved to MongoDB
    with open_store(store_config) as second:
        for pid, h, fp in live + odd:
            r = second.lookup(h, fp)
            assert (r.kind, r.original_id) == ("exact", pid)
            r = second.lookup(_h(pid, "other"), flip(fp, 7))
            assert (r.kind, r.original_id, r.distance) == ("near", pid, 1)
        for pid, h, fp in lost:   # dropped (a cluster's exact entries name their page), or replaced when met
            fresh = second.new_page_id()
            assert second.check_and_insert(fresh, h, fp).kind == "new"   # no copy of a page never saved
            r = second.lookup(h, fp)
            assert (r.kind, r.original_id) == ("exact", fresh)
        assert second.index.count() == len(live) + len(odd) + len(lost)


def test_an_exact_entry_naming_no_page_is_never_an_original(store):
    """An exact-hash entry whose page neither Redis nor MongoDB names (an unsaved page under another SimHash,
    or one an outage left): the page checked against it is kept and decided again later, never 'an exact
    copy of nothing' (the crawl failed such pages with 'a duplicate needs original_id'; invariant seed 118)."""
    from storage.redis_index import exact_key_parts

    bucket, field = exact_key_parts(_h(1))
    store.redis.hset(f"{store.config.key_prefix}ex:{bucket}", field, 1)
    pid = store.new_page_id()
    res = store.check_and_insert(pid, _h(1), 12345)
    assert (res.kind, res.original_id, res.spooled) == ("new", None, True)
    assert store.spool.count() == 1   # its decision, for the replay
