"""Pages, duplicates, sources, matches, runs, seed index and bad input on the real servers."""
from __future__ import annotations

import datetime as dt

import pytest
from pymongo import monitoring

from storage import BadDocument, to_signed64, to_unsigned64
from storage.matchlist import MatchQuery


class CommandNames(monitoring.CommandListener):
    """The names of the commands a client sends, to one collection or to any, and its reads with what they
    select (command, filter or pipeline)."""

    def __init__(self, collection: str | None = None) -> None:
        self.collection = collection
        self.names: list[str] = []
        self.reads: list[tuple[str, object]] = []

    def started(self, event) -> None:
        if self.collection is None or event.command.get(event.command_name) == self.collection:
            self.names.append(event.command_name)
            if event.command_name in ("find", "aggregate", "count"):
                c = event.command
                self.reads.append((event.command_name, c.get("filter", c.get("pipeline", c.get("query")))))

    def succeeded(self, event) -> None:
        pass

    def failed(self, event) -> None:
        pass


def page(store, url: str, **kw) -> dict:
    d = {"url": url, "site": "a.test", "title": "标题", "text": "正文。" * 10, "simhash": 2**64 - 1,
         "content_hash": "f" * 32, "dna": [1, 2**70], "spider": "news"}
    d.update(kw)
    return d


def test_signed_simhash_roundtrip():
    for v in (0, 1, 2**63 - 1, 2**63, 2**64 - 1):
        s = to_signed64(v)
        assert -(2**63) <= s < 2**63 and to_unsigned64(s) == v


def test_save_get_page(store):
    pid = store.save_page(page(store, "http://a.test/1"))
    raw = store.pages.find_one({"url": "http://a.test/1"})
    assert raw["simhash"] == -1 and str(raw["_id"]) == pid       # signed int64 in MongoDB
    got = store.get_page(pid)
    assert got["simhash"] == 2**64 - 1 and got["dna"] == [1, 2**70] and got["id"] == pid
    assert store.page_by_url("http://a.test/1")["id"] == pid
    assert store.get_page("0" * 24) is None
    # re-crawl of the same URL under a new id updates the stored page and keeps its id
    again = store.save_page(page(store, "http://a.test/1", _id=store.new_page_id(), title="新标题"))
    assert again == pid and store.get_page(pid)["title"] == "新标题"
    assert store.pages.count_documents({}) == 1


def test_oversized_page_is_truncated_with_reason(store):
    big = "字" * (7 * 1024 * 1024)  # 21 MB of UTF-8
    pid = store.save_page(page(store, "http://a.test/big", text=big))
    got = store.get_page(pid)
    assert 0 < len(got["text"]) < len(big) and big.startswith(got["text"])
    assert got["truncated"]["original_chars"] == len(big) and "16 MB" in got["truncated"]["reason"]
    with pytest.raises(BadDocument, match="16 MB"):
        store.save_page(page(store, "http://a.test/big2", title="x" * (17 * 1024 * 1024)))
    assert store.page_by_url("http://a.test/big2") is None


@pytest.mark.parametrize("bad", [
    {"text": "ok\ud800bad"},                 # lone surrogate
    {"text": b"\xff\xfe not utf-8"},
    {"$where": "x"},
    {"a.b": 1},
    {"meta": {"$x": 1}},
    {"url": ""},
])
def test_bad_documents_are_refused_clearly(store, bad):
    with pytest.raises(BadDocument):
        store.save_page({**page(store, "http://a.test/bad"), **bad})
    assert store.pages.count_documents({}) == 0


def test_odd_urls_and_ids_are_fine(store):
    url = "http://a.test/路径?q=*[x]&a=$1#frag"
    pid = store.save_page(page(store, url, _id="custom:id*[1]"))
    assert pid == "custom:id*[1]" and store.page_by_url(url)["id"] == pid
    r = store.check_and_insert(pid, "e" * 32, 12345)
    assert r.kind == "new" and store.check_and_insert("x", "e" * 32, 12345).original_id == pid


def test_duplicates_and_runs(store):
    orig = store.save_page(page(store, "http://a.test/o"))
    store.record_duplicate({"url": "http://b.test/c", "original_id": orig, "original_url": "http://a.test/o",
                            "method": "near", "distance": 2, "site": "b.test", "title": "t"})
    store.record_duplicate({"url": "http://b.test/c", "original_id": orig, "method": "exact", "distance": 0})
    clusters, more = store.duplicate_clusters()
    assert not more and [c["_id"] for c in clusters] == [orig] and clusters[0]["original_url"] == "http://a.test/o"
    assert [(d["url"], d["method"]) for d in clusters[0]["copies"]] == [("http://b.test/c", "exact")]
    with pytest.raises(BadDocument):
        store.record_duplicate({"url": "http://b.test/d", "original_id": orig, "method": "fuzzy"})
    rid = store.runs.start("news")
    store.runs.finish(rid, {"pages": 3, "duplicates": 1})
    run = store.runs.recent()[0]
    assert run["id"] == rid and run["counts"]["pages"] == 3 and run["finished"] >= run["started"]


def test_copies_recorded_in_one_batch(store):
    orig = store.save_page(page(store, "http://a.test/o"))
    store.record_duplicate({"url": "http://b.test/seen", "original_id": orig, "method": "near", "distance": 1})
    results = store.record_duplicates([
        {"url": "http://b.test/new", "original_id": orig, "method": "exact"},
        {"url": "http://b.test/bad", "original_id": orig, "method": "fuzzy"},
        {"url": "http://b.test/seen", "original_id": orig, "method": "exact", "distance": 0},
    ])
    assert results[0] is True and isinstance(results[1], BadDocument) and results[2] is False
    copies = {d["url"]: d["method"] for d in store.find_duplicates()}
    assert copies == {"http://b.test/new": "exact", "http://b.test/seen": "exact"}


def test_sources_and_seed_index(store):
    assert store.sources.add("s1", "作品一", "一二三四五", author="甲") is True
    assert store.sources.add("s1", "作品一", "一二三四五") is False
    assert store.sources.add("s1", "作品一", "一二三四五六") is True
    assert [s["id"] for s in store.sources.all()] == ["s1"] and "text" not in store.sources.all()[0]
    assert store.sources.get("s1")["text"] == "一二三四五六"
    idx = store.sources.seed_index()
    idx.add("s1", [(2**64 - 1, 0), (7, 3), (7, 9)])
    idx.add("s2", [(7, 1)])
    assert idx.lookup([7, 2**64 - 1, 8]) == {7: [("s1", 3), ("s1", 9), ("s2", 1)], 2**64 - 1: [("s1", 0)]}
    idx.add("s1", [(8, 5)])  # re-adding replaces
    assert idx.lookup([7, 8, 2**64 - 1]) == {7: [("s2", 1)], 8: [("s1", 5)]}
    assert store.sources.remove("s1") is True and store.sources.remove("s1") is False
    assert idx.lookup([8]) == {} and store.sources.get("s1") is None


def test_matches_upsert_review_find(store):
    ids = [store.matches.save({"suspect_url": f"http://x.test/{i}", "source_id": "s1", "site": "x.test" if i % 2
                               else "y.test", "score": i / 10, "suspect_spans": [[0, 5]]}) for i in range(10)]
    assert store.matches.review(ids[9], "confirm", "ann", "clear copy")["status"] == "confirmed"
    # a re-crawl refreshes the score but keeps the review
    again = store.matches.save({"suspect_url": "http://x.test/9", "source_id": "s1", "score": 0.95, "status": "new"})
    assert again == ids[9]
    m = store.matches.get(ids[9])
    assert (m["status"], m["score"], m["reviewer"], len(m["history"])) == ("confirmed", 0.95, "ann", 1)
    store.matches.review(ids[8], "dismiss", "bob")
    page, nxt = store.matches.find(MatchQuery(status="new", sort="score", per_page=3))
    assert [d["score"] for d in page] == [0.7, 0.6, 0.5] and nxt
    page, _ = store.matches.find(MatchQuery(site="x.test", score_min=0.3, sort="score_asc"))
    assert [d["score"] for d in page] == [0.3, 0.5, 0.7, 0.95]
    assert [d["status"] for d in store.matches.each(MatchQuery(status="dismissed"))] == ["dismissed"]
    assert store.matches.find(MatchQuery(date_from=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)))[0] == []
    assert store.matches.review(ids[0], "license", "ann")["status"] == "licensed"
    with pytest.raises(ValueError):
        store.matches.review(ids[0], "approve", "ann")
    assert store.matches.review("0" * 24, "confirm", "ann") is None


def test_status(store):
    store.save_page(page(store, "http://a.test/s"))
    st = store.status()
    assert st["mongo"]["ok"] and st["redis"]["ok"] and st["counts"]["pages"] == 1
    assert st["db_name"] == store.config.db_name and st["spool"]["entries"] == 0


@pytest.mark.parametrize("taken_for_new", [False, True], ids=["looked-up", "all-taken-for-new"])
def test_save_pages_does_what_save_page_does_for_each(store, taken_for_new):
    """A batch: new pages, a re-crawl under a new id, another URL claiming a stored id, the same id twice
    in one batch and a bad document -- each ends as save_page would leave it; the bad one alone is refused.
    The same when the crawl takes every page for new (`new`): the held ones are refused by the insert and
    take save_page's path."""
    held = store.save_page(page(store, "http://a.test/held"))
    recrawled = store.save_page(page(store, "http://a.test/old"))
    twin = store.new_page_id()
    docs = [page(store, "http://a.test/n1", _id=store.new_page_id()),
            page(store, "http://a.test/old", _id=store.new_page_id(), title="新标题"),   # re-crawl: keeps its id
            page(store, "http://a.test/forged", _id=held),                             # another URL's id
            page(store, "http://a.test/t", _id=twin),
            page(store, "http://a.test/t2", _id=twin),                                 # same id, other URL
            page(store, "http://a.test/bad", text="坏\ud800"),
            page(store, "http://a.test/n2", _id=store.new_page_id())]
    out = store.save_pages(docs, [True] * len(docs) if taken_for_new else None)
    assert isinstance(out[5], BadDocument) and store.page_by_url("http://a.test/bad") is None
    assert out[0] == str(docs[0]["_id"]) and store.get_page(out[0])["url"] == "http://a.test/n1"
    assert out[1] == recrawled and store.get_page(recrawled)["title"] == "新标题"
    assert out[2] != held and store.get_page(held)["url"] == "http://a.test/held"
    assert store.get_page(out[2])["id_conflict"] == {"claimed_id": held, "held_by": "http://a.test/held"}
    assert out[3] == twin and store.get_page(twin)["url"] == "http://a.test/t"
    assert out[4] != twin and store.get_page(out[4])["url"] == "http://a.test/t2"
    assert store.get_page(out[6])["url"] == "http://a.test/n2"
    assert store.pages.count_documents({}) == 7
    assert store.save_pages([]) == []


def test_save_pages_again_is_idempotent(store):
    """Saving the same batch twice (a retried write) leaves one page per URL under the same ids, also when the
    second save takes every page for new."""
    docs = [page(store, f"http://a.test/r{i}", _id=store.new_page_id()) for i in range(5)]
    first = store.save_pages(docs)
    assert store.save_pages(docs) == first and store.pages.count_documents({}) == 5
    assert store.save_pages(docs, [True] * 5) == first and store.pages.count_documents({}) == 5


def test_pages_the_crawl_found_new_are_inserted_without_a_look_up(store, monkeypatch):
    """A batch of pages whose text the crawl's dedup found new: one insert, no find of the ids first (a
    command a batch); pages not known new are looked up first, as before."""
    import pymongo

    seen = CommandNames("pages")
    client = pymongo.MongoClient(store.mongo_uri, event_listeners=[seen])
    try:
        monkeypatch.setattr(store, "pages", client[store.db.name]["pages"])
        store.save_pages([page(store, f"http://a.test/f{i}", _id=store.new_page_id()) for i in range(3)], [True] * 3)
        new_only, seen.names = seen.names, []
        store.save_pages([page(store, f"http://a.test/g{i}", _id=store.new_page_id()) for i in range(3)])
    finally:
        client.close()
    assert new_only == ["insert"], new_only
    assert seen.names == ["find", "insert"], seen.names
    assert store.db.pages.count_documents({}) == 6


def test_a_store_open_reads_pages_only_through_their_indexes(store, store_config, monkeypatch):
    """Every crawl opens the store before its first request. SecantusDB reads every page for a filter with
    `$ne` or `$or` (its planner then uses no index, even with an `_id`) and for an aggregation that counts
    them: 2.5-3.3 s on a store of 10,000 pages. The open of a store with nothing to repair now reads ranges of
    indexes and counts with the server's `count` command (exact there, no page decoded)."""
    import pymongo

    from storage import open_store

    pid = store.new_page_id()   # indexed and saved, as a crawl leaves it: the open has nothing to repair
    store.check_and_insert(pid, "e" * 32, 2**63 + 5)
    store.save_page(page(store, "http://a.test/open", _id=pid, content_hash="e" * 32, simhash=2**63 + 5))
    reads = CommandNames("pages")
    client_class = pymongo.MongoClient
    monkeypatch.setattr(pymongo, "MongoClient", lambda *a, **kw: client_class(
        *a, **{**kw, "event_listeners": [*kw.get("event_listeners", ()), reads]}))
    with open_store(store_config):
        pass
    assert reads.reads, "the open read no page: nothing was checked"
    secantus = "secantusVersion" in store.mongo.admin.command("buildInfo")
    for command, what in reads.reads:
        assert command != "aggregate" or not secantus, what   # a mongod counts by aggregation (exactly)
        text = repr(what)
        assert "$or" not in text and "$ne" not in text and "$nor" not in text, (command, what)
        assert what or command == "count", (command, what)   # count: the collection's rows, not decoded


def test_indexes_are_made_in_one_command_a_collection_and_survive_an_equivalent_one(store):
    """The store's open makes each collection's indexes in one round trip; where an equivalent index already
    exists under another name (made by hand or an older version) the batch fails and each index is tried
    alone, so the others are still made and the unique ones still hold."""
    from storage.schema import INDEXES, ensure_indexes

    store.db.pages.drop_indexes()
    store.db.pages.create_index("site", name="by_site_made_by_hand")

    import pymongo
    count = CommandNames()
    client = pymongo.MongoClient(store.mongo_uri, event_listeners=[count])
    try:
        ensure_indexes(client[store.db.name])
    finally:
        client.close()
    pages = store.db.pages.index_information()
    assert "by_site_made_by_hand" in pages and pages["url_1"].get("unique")
    assert {"content_hash_1", "fp_version_1", "undecided_1"} <= set(pages)
    others = len(INDEXES) - 1
    assert count.names.count("createIndexes") == others + 1 + len(INDEXES["pages"])  # pages: batch, then one by one
    assert count.names.count("listIndexes") == 1 and "dropIndexes" not in count.names   # nothing retired to drop
    ensure_indexes(store.db)   # idempotent


def test_the_open_drops_indexes_no_query_reads_and_keeps_the_rest(store, store_config):
    """A store an earlier version made has three indexes on pages that no query reads (two on fields no page
    has); every save paid for them. The next open drops them and nothing else."""
    from storage import open_store
    from storage.schema import RETIRED_INDEXES

    for name in RETIRED_INDEXES["pages"]:
        store.db.pages.create_index(name.rsplit("_", 1)[0])
    store.db.pages.create_index("title", name="made_by_hand")
    before = set(store.db.pages.index_information())
    assert set(RETIRED_INDEXES["pages"]) <= before
    with open_store(store_config):
        pass
    after = set(store.db.pages.index_information())
    assert after == before - set(RETIRED_INDEXES["pages"]) and "made_by_hand" in after


def test_a_cluster_is_found_by_page_id_page_url_or_copy_url(store):
    """`python -m storage duplicates --of`: one look-up by id, then one by URL (an `$or` of the two made
    SecantusDB read every page), then the copy records."""
    orig = store.save_page(page(store, "http://a.test/o", _id=store.new_page_id()))
    store.record_duplicate({"url": "http://b.test/c", "original_id": orig, "original_url": "http://a.test/o",
                            "method": "exact", "distance": 0})
    for key in (orig, "http://a.test/o", "http://b.test/c"):
        cluster = store.cluster_of(key)
        assert cluster is not None and cluster["original"]["id"] == orig, (key, cluster)
        assert [c["url"] for c in cluster["copies"]] == ["http://b.test/c"]
    assert store.cluster_of("http://a.test/unknown") is None
