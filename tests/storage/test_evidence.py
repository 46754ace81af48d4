"""The evidence log: snapshots are kept as fetched, the chain detects edits, deletions and truncation,
concurrent appenders never share a seq, and a page id held by one URL is never overwritten by another."""
from __future__ import annotations

import threading
import zlib
from datetime import datetime, timezone
from typing import Any

from storage.evidence import GENESIS, chain_digest, raw_bytes

RAW = "<html><head><title>第一回</title></head><body><p>滚滚长江东逝水</p></body></html>".encode("gbk")


def snapshot(i: int = 0) -> dict:
    text = f"滚滚长江东逝水，浪花淘尽英雄。{i}"
    return {"suspect_url": f"http://pirate.example/{i}.html", "final_url": f"http://pirate.example/{i}.html?p=1",
            "raw": RAW, "headers": {"content-type": "text/html; charset=gbk"}, "status": 200,
            "fetched": datetime(2026, 11, 1, 8, 0, 0, 123456, tzinfo=timezone.utc), "text": text,
            "source_id": "sgyy-1", "score": 0.5, "suspect_spans": [[0, 7]], "source_spans": [[3, 10]],
            "passages": [{"suspect_span": [0, 7], "source_span": [3, 10], "suspect_text": text[:7]}]}


def a_match(store: Any, i: int = 0) -> str:
    return store.matches.save({"suspect_url": f"http://pirate.example/{i}.html", "source_id": "sgyy-1",
                               "score": 0.5, "suspect_spans": [[0, 7]], "source_spans": [[3, 10]]})


def test_snapshot_round_trip_and_match_link(store):
    mid = a_match(store)
    seq = store.evidence.add(mid, snapshot())
    rec = store.evidence.for_match(store.matches.get(mid))
    assert rec["_id"] == seq == 0 and rec["prev_digest"] == GENESIS
    assert raw_bytes(rec) == RAW and rec["raw_len"] == len(RAW)
    assert rec["final_url"].endswith("?p=1") and rec["headers"]["content-type"].endswith("gbk")
    assert rec["text"].startswith("滚滚长江") and rec["passages"][0]["suspect_text"] == "滚滚长江东逝水"
    assert store.evidence.verify().ok


def test_verify_names_the_edited_record(store):
    mid = a_match(store)
    for i in range(4):
        store.evidence.add(mid, snapshot(i))
    assert store.evidence.verify().checked == 4
    store.db.evidence.update_one({"_id": 2}, {"$set": {"text": "别人的文字"}})
    res = store.evidence.verify()
    assert not res.ok and res.bad_seq == 2 and "text" in res.problem


def test_verify_detects_a_resealed_record_through_the_chain(store):
    """An editor who recomputes the record's own digests still breaks the link to the next record."""
    from storage.evidence import content_digest, sha256_hex

    mid = a_match(store)
    for i in range(3):
        store.evidence.add(mid, snapshot(i))
    rec = store.evidence.get(1)
    rec["text"] = "伪造"
    rec["text_sha256"] = sha256_hex("伪造".encode())
    rec["content_digest"] = content_digest(rec)
    rec["digest"] = chain_digest(rec["prev_digest"], rec["content_digest"])
    store.db.evidence.replace_one({"_id": 1}, rec)
    res = store.evidence.verify()
    assert not res.ok and res.bad_seq == 2 and "prev_digest" in res.problem


def test_verify_detects_deletion_and_truncation(store):
    mid = a_match(store)
    for i in range(3):
        store.evidence.add(mid, snapshot(i))
    store.db.evidence.delete_one({"_id": 2})
    res = store.evidence.verify()
    assert not res.ok and "removed from the end" in res.problem
    store.db.evidence.delete_one({"_id": 0})
    res = store.evidence.verify()
    assert not res.ok and res.bad_seq == 0 and "missing" in res.problem


def test_raw_bytes_edit_is_detected(store):
    mid = a_match(store)
    store.evidence.add(mid, snapshot())
    from bson.binary import Binary

    store.db.evidence.update_one({"_id": 0}, {"$set": {"raw": Binary(zlib.compress(b"<p>other</p>"))}})
    assert "raw" in store.evidence.verify().problem


def test_concurrent_appends_make_one_chain(store_config):
    """Four writers (each with its own store/connection, as crawler processes have) never share a seq."""
    from storage import open_store

    stores = [open_store(store_config) for _ in range(4)]
    try:
        mid = a_match(stores[0])
        seqs: list[int] = []
        lock = threading.Lock()

        def work(st: Any, k: int) -> None:
            for i in range(8):
                s = st.evidence.add(mid, snapshot(k * 100 + i))
                with lock:
                    seqs.append(s)

        threads = [threading.Thread(target=work, args=(st, k)) for k, st in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert sorted(seqs) == list(range(32))
        res = stores[0].evidence.verify()
        assert res.ok and res.checked == 32, res
        proof = stores[0].evidence.proof(5)
        d = proof["digest"]
        for c in proof["later_content_digests"]:
            d = chain_digest(d, c)
        assert d == proof["head"]["digest"] and proof["head"]["seq"] == 31
    finally:
        stores[0].drop_all()
        for st in stores:
            st.close()


def test_page_id_held_by_another_url_is_not_overwritten(store):
    pid = "0123456789abcdef0123456789abcdef"
    store.save_page({"_id": pid, "url": "http://a.example/news/a4.html", "text": "甲站原文"})
    got = store.save_page({"_id": pid, "url": "http://b.example/forged.html", "text": "乙站伪造",
                           "canonical_claim": "http://a.example/news/a4.html"})
    assert got != pid
    assert store.get_page(pid)["text"] == "甲站原文"
    forged = store.get_page(got)
    assert forged["url"] == "http://b.example/forged.html"
    assert forged["id_conflict"] == {"claimed_id": pid, "held_by": "http://a.example/news/a4.html"}
    # the same URL re-crawled keeps its id and is updated
    assert store.save_page({"_id": pid, "url": "http://a.example/news/a4.html", "text": "甲站更新"}) == pid
    assert store.get_page(pid)["text"] == "甲站更新"


def test_same_fetch_again_keeps_its_snapshot_a_change_appends(store):
    mid = a_match(store)
    first = store.evidence.add(mid, snapshot())
    assert store.evidence.add(mid, snapshot()) == first
    changed = {**snapshot(), "raw": RAW + b"<!-- edited -->"}
    assert store.evidence.add(mid, changed) == first + 1
    assert store.matches.get(mid)["evidence_seq"] == first + 1
