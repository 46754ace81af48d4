"""The earliest-published rule against every order of the writes that follow a decision (real servers).

A crawl decides a page long before its save lands (group commit, worker threads, other crawlers), so a
copy published earlier can displace a page MongoDB does not hold yet, and a copy record can name a page
displaced a moment later. Whatever the order, the store must end with one page per story and every copy
pointing to it. Before the displacement marker, the first case stored both pages (the old page was looked
up in MongoDB, not found, and the displacement silently skipped).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import threading

import pytest

from fingerprint.neardup import DedupDoc, DedupEngine, LookupUnavailable, NearDupParams
from fingerprint.synonyms import synonyms_enabled
from storage.dedup_index import RedisDedupIndex

STORY = ("北京时间昨日晚间，国家统计局发布了最新一期的经济运行数据。数据显示，前三季度国内生产总值同比增长百分之五点二，"
         "消费对经济增长的贡献率继续提高。专家表示，随着一系列稳增长政策落地见效，经济回升向好的态势将进一步巩固。"
         "与此同时，部分地区的就业压力依然存在，需要持续关注重点群体的就业情况。")
OTHER = ("本报讯 记者从市交通委员会获悉，今年冬季城市公交线网将迎来一轮优化调整，新开通的十二条线路覆盖了多个新建居住区。"
         "市民可通过官方应用查询实时到站信息，部分线路还将试点夜间延时服务，方便晚归乘客出行。")


def _doc(pid: str, text: str, day: int | None) -> DedupDoc:
    published = dt.date(2024, 5, day) if day else None
    return DedupDoc.of(pid, text, NearDupParams(), published=published, url=f"http://127.0.0.1/{pid}.html")


def _page(doc: DedupDoc) -> dict:
    return {"_id": doc.page_id, "url": doc.url, "text": doc.text, "content_hash": doc.content_hash,
            "simhash": doc.simhash, "sketch": list(doc.sketch), "published": str(doc.published)}


def _copy(doc: DedupDoc, original: str) -> dict:
    return {"url": doc.url, "original_id": original, "method": "exact", "distance": 0}


def _state(store) -> tuple[list[str], dict[str, str]]:
    pages = sorted(str(p["_id"]) for p in store.pages.find({}, {"_id": 1}))
    copies = {d["url"].rsplit("/", 1)[1][:-5]: d["original_id"] for d in store.duplicates.find({})}
    return pages, copies


def _engine(store) -> DedupEngine:
    return DedupEngine(NearDupParams(k=store.config.simhash_k), RedisDedupIndex(store))


@pytest.mark.parametrize("order", ["late-then-early", "early-then-late", "early-only-after"])
def test_displaced_page_is_never_kept_whatever_lands_first(store, order):
    """R (later date) decided new, then O (earlier) displaces it before or after R's save lands."""
    engine = _engine(store)
    late, early = _doc("r" * 32, STORY, 20), _doc("o" * 32, STORY, 10)
    assert engine.decide(late).kind == "new"
    if order == "early-only-after":          # R's save lands before O is even decided
        store.save_pages([_page(late)])
    verdict = engine.decide(early)
    assert verdict.kind == "new" and verdict.replaced == late.page_id
    saves = [[_page(late)], [_page(early)]]
    if order == "early-then-late":
        saves.reverse()
    elif order == "early-only-after":       # R's save lands once more (a spooled save replayed late)
        saves = [[_page(early)], [_page(late)]]
    for batch in saves:
        store.save_pages(batch)
    pages, copies = _state(store)
    assert pages == [early.page_id]
    assert copies == {late.page_id: early.page_id}


def test_copy_recorded_after_its_original_was_displaced_points_to_the_new_one(store):
    """A copy C decided against R before the displacement, its record written after it."""
    engine = _engine(store)
    late, early, copy = _doc("r" * 32, STORY, 20), _doc("o" * 32, STORY, 10), _doc("c" * 32, STORY, None)
    engine.decide(late)
    store.save_pages([_page(late)])
    assert engine.decide(copy).original == late.page_id      # C copies R (no date: no comparison)
    engine.decide(early)                                       # O displaces R
    store.record_duplicates([_copy(copy, late.page_id)])      # C's record lands late, naming R
    store.save_pages([_page(early)])
    pages, copies = _state(store)
    assert pages == [early.page_id]
    assert copies == {late.page_id: early.page_id, copy.page_id: early.page_id}


def test_a_marker_taken_away_after_the_displacer_wrote_it_leaves_the_copies_where_they_are(store):
    """settle_copies(marked=True) skips the look for the marker its caller has just written. If a cycle's
    break took that marker away meanwhile (the page stands), the copies stay pointing to the page, as after a
    look that found no marker; with the marker there they move to the displacer."""
    late, early, copy = _doc("r" * 32, STORY, 20), _doc("o" * 32, STORY, 10), _doc("c" * 32, STORY, None)
    store.save_pages([_page(late), _page(early)])
    store.record_duplicates([_copy(copy, late.page_id)])
    assert store.settle_copies([late.page_id], marked=True) == 0   # no marker: nothing moves
    assert _state(store)[1] == {copy.page_id: late.page_id}
    store.demotions.insert_one({"_id": late.page_id, "by": early.page_id, "by_url": early.url, "by_keys": None,
                                "method": "exact"})
    assert store.settle_copies([late.page_id], marked=True) == 1
    assert _state(store)[1] == {copy.page_id: early.page_id}


def test_a_chain_of_earlier_copies_ends_at_the_earliest_in_every_save_order(store_config):
    """R (day 20), then O1 (day 15) and O0 (day 10): saves landing in any order leave O0 alone."""
    from dataclasses import replace

    from storage import open_store

    for n, order in enumerate(itertools.permutations(range(3))):
        store = open_store(replace(store_config, db_name=f"{store_config.db_name}_{n}",
                                   key_prefix=f"{store_config.key_prefix}{n}:"))
        try:
            engine = _engine(store)
            docs = [_doc("a" * 32, STORY, 20), _doc("b" * 32, STORY, 15), _doc("c" * 32, STORY, 10)]
            for d in docs:
                assert engine.decide(d).kind == "new"
            for i in order:
                store.save_pages([_page(docs[i])])
            pages, copies = _state(store)
            assert pages == ["c" * 32], order
            assert copies == {"a" * 32: "c" * 32, "b" * 32: "c" * 32}, order
        finally:
            store.drop_all()
            store.close()


def test_two_displacers_of_one_page_do_not_both_win(store):
    """Two crawlers each find an earlier copy of R at once: the displacement is taken once."""
    first, second = _engine(store), _engine(store)       # two engines: two crawlers' own caches
    late = _doc("r" * 32, STORY, 20)
    o1, o2 = _doc("1" * 32, STORY, 12), _doc("2" * 32, STORY, 14)
    first.decide(late)
    store.save_pages([_page(late)])
    assert first.decide(o1).replaced == late.page_id
    v2 = second.decide(o2)                                   # later than o1: a copy of the winner
    assert v2.is_duplicate and v2.original == o1.page_id
    store.record_duplicates([_copy(o2, v2.original)])
    store.save_pages([_page(o1)])
    pages, copies = _state(store)
    assert pages == [o1.page_id]
    assert copies == {late.page_id: o1.page_id, o2.page_id: o1.page_id}


def test_distinct_story_is_untouched(store):
    """Displacements only ever move copies: another story stays."""
    engine = _engine(store)
    late, early, other = _doc("r" * 32, STORY, 20), _doc("o" * 32, STORY, 10), _doc("x" * 32, OTHER, 25)
    for d in (late, other, early):
        engine.decide(d)
    store.save_pages([_page(late), _page(other), _page(early)])
    pages, _ = _state(store)
    assert pages == sorted([early.page_id, other.page_id])


@pytest.mark.parametrize("record_first", [True, False])
def test_copy_of_a_retracted_page_follows_it_to_its_original(store, record_first):
    """Q was decided against P while P's claim was visible; P then turned out to copy O (passages, or a
    Redis Cluster block it left): Q's record ends at O whichever lands first."""
    o, p, q = "o" * 32, "p" * 32, "q" * 32
    store.save_pages([{"_id": o, "url": "http://127.0.0.1/o.html", "text": STORY}])
    record = [{"url": "http://127.0.0.1/q.html", "original_id": p, "method": "near", "distance": 2}]
    if record_first:
        store.record_duplicates(record)
    store.forward_copy(p, o, "http://127.0.0.1/o.html", "passages")
    if not record_first:
        store.record_duplicates(record)
    copy = store.duplicates.find_one({"url": "http://127.0.0.1/q.html"})
    assert (copy["original_id"], copy["original_url"]) == (o, "http://127.0.0.1/o.html")


def test_another_crawlers_unsaved_page_is_displaced_by_its_date(store):
    """Crawler 1 keeps R (day 20), its save not landed; crawler 2 finds O (day 10): R's date comes from the
    claim, not from MongoDB (which has no R yet), so O still takes its place."""
    first, second = _engine(store), _engine(store)
    late, early = _doc("r" * 32, STORY, 20), _doc("o" * 32, STORY, 10)
    first.decide(late)
    assert second.decide(early).replaced == late.page_id
    store.save_pages([_page(late)])
    store.save_pages([_page(early)])
    pages, copies = _state(store)
    assert pages == [early.page_id] and copies == {late.page_id: early.page_id}
    assert not store.redis.exists(f"{store.config.key_prefix}pd:{early.page_id}")   # dropped with the save


def test_a_page_fetched_by_two_crawlers_is_never_its_own_copy(store):
    """Both crawlers fetch O (day 10; same URL, same page id) after C (day 25) was kept. Crawler 2's check
    finds C; before it goes on, crawler 1 decides O, which displaces C. Crawler 2 must keep O (the
    page that now stands for C is O itself), not record 'O copies O' (seen with two crawlers at once)."""
    late, early = _doc("c" * 32, STORY, 25), _doc("o" * 32, STORY, 10)
    first = _engine(store)
    first.decide(late)

    class Interleaved(RedisDedupIndex):
        def check_and_insert(self, doc):
            hit = super().check_and_insert(doc)
            assert first.decide(early).replaced == late.page_id    # crawler 1, between check and resolve
            return hit

    second = DedupEngine(NearDupParams(k=store.config.simhash_k), Interleaved(store))
    again = second.decide(early)
    assert not again.is_duplicate, again


def _keys(doc: DedupDoc) -> dict:
    """What replace_original takes of the page that displaces another."""
    return {"id": doc.page_id, "url": doc.url, "content_hash": doc.content_hash, "simhash": doc.simhash,
            "sketch": list(doc.sketch)}


def test_a_join_never_drops_the_record_of_a_displacement_made_meanwhile(store):
    """Crawler 1 joins W (day 17) and D (day 16), both stored: D stands, W is displaced. Before crawler 1 drops
    any copy record of D's URL ("the page that stands is no copy"), crawler 2's E (day 14) displaces D and
    records "D copies E". That record must stay: D is E's copy (invariant seed 4410: it was deleted, so D's URL
    ended with no outcome in the store and the story had one copy too few)."""
    d, w, e = _doc("d" * 32, STORY, 16), _doc("a" * 32, STORY, 17), _doc("e" * 32, STORY, 14)
    store.save_pages([_page(d), _page(w)])
    assert store.replace_original(w.page_id, _keys(d), "near") is None        # crawler 1: D stands, W moves
    real = store._hand_over

    def crawler_1_meanwhile(old, marker, *args):
        if old["_id"] == d.page_id:    # E's record of D is written, D's page not yet deleted
            store._drop_own_record(d.page_id)
        return real(old, marker, *args)

    store._hand_over = crawler_1_meanwhile
    assert store.replace_original(d.page_id, _keys(e), "near") is None        # crawler 2: E displaces D
    store.save_pages([_page(e)])
    assert _state(store) == ([e.page_id], {d.page_id: e.page_id, w.page_id: e.page_id})


def test_the_page_that_stands_loses_a_record_that_leads_back_to_it(store):
    """A join whose two pages lead to one page D (another crawler joined them first): a record of D's URL whose
    original leads back to D ("D copies W", W displaced by D) calls D a copy of itself, and goes."""
    d, w = _doc("d" * 32, STORY, 16), _doc("a" * 32, STORY, 17)
    store.save_pages([_page(d), _page(w)])
    assert store.replace_original(w.page_id, _keys(d), "near") is None
    store.duplicates.insert_one({"url": d.url, "original_id": w.page_id, "method": "near"})   # written late
    store._join(w.page_id, d.page_id, "near")
    assert _state(store) == ([d.page_id], {w.page_id: d.page_id})


def test_an_undated_page_that_displaced_its_original_meanwhile_is_no_copy_of_it(store):
    """Crawler 1 checks U (undated) and finds N (dated), kept earlier. Before it goes on, crawler 2, which stored
    U too, joins the two: the undated page stands, N is displaced by U. Crawler 1 must keep U, not call it a
    copy of N (invariant seed 4410: U left `pages` as N's copy, the markers N -> U and U -> N formed a cycle
    whose break chose N, which was gone too: the story ended with no page)."""
    n, u = _doc("n" * 32, STORY, 16), _doc("u" * 32, STORY, None)
    assert _engine(store).decide(n).kind == "new"
    store.save_pages([_page(n), _page(u)])

    class Interleaved(RedisDedupIndex):
        def check_and_insert(self, doc):
            hit = super().check_and_insert(doc)
            assert hit.original == n.page_id, hit
            store._join(u.page_id, n.page_id, "exact")    # crawler 2, between check and resolve
            return hit

    verdict = DedupEngine(NearDupParams(k=store.config.simhash_k), Interleaved(store)).decide(u)
    assert not verdict.is_duplicate, verdict
    assert _state(store) == ([u.page_id], {n.page_id: u.page_id})


@pytest.mark.parametrize("dated, stands", [(True, "w"), (False, "z")])
def test_displacer_of_a_passage_copy_joins_that_copys_original(store, dated, stands):
    """Crawler 2 finds X a copy of Z and forwards it; crawler 1 had meanwhile let W (an exact copy of X,
    published earlier) displace X. W copies Z too: one of W and Z stands, the earlier published (an undated
    Z stays, as the original kept first). Before the join, W and Z were both kept (invariant seed 6)."""
    z = _doc("z" * 32, STORY, 5 if dated else None)
    x, w = _doc("x" * 32, STORY, 20), _doc("w" * 32, STORY, 1)
    store.save_pages([_page(z)])
    store.save_pages([_page(x)])
    store.replace_original(x.page_id, {"id": w.page_id, "url": w.url, "content_hash": w.content_hash,
                                       "simhash": w.simhash, "sketch": list(w.sketch)}, "exact")
    store.save_pages([_page(w)])
    store.forward_copy(x.page_id, z.page_id, z.url, "passages")          # crawler 2's late forward
    pages, copies = _state(store)
    loser = "z" if stands == "w" else "w"
    assert pages == [(stands * 32)], (pages, copies)
    assert copies[loser * 32] == stands * 32 and copies["x" * 32] == stands * 32


@pytest.mark.parametrize("record_first", [True, False])
def test_a_page_stored_by_one_crawler_and_recorded_a_copy_by_another_is_joined(store, record_first):
    """Crawler 1 stores P; crawler 2 recorded P's URL (same text) as a copy of O: one story kept twice.
    Whichever write lands second joins them: O (earlier) stands, P is its copy, recorded once."""
    o, p = _doc("o" * 32, STORY, 3), _doc("p" * 32, STORY, 9)
    store.save_pages([_page(o)])
    record = [{**_copy(p, o.page_id), "content_hash": p.content_hash}]
    writes = [lambda: store.record_duplicates(record), lambda: store.save_pages([_page(p)])]
    for write in (writes if record_first else writes[::-1]):
        write()
    pages, copies = _state(store)
    assert pages == [o.page_id] and copies == {p.page_id: o.page_id}


def test_a_page_is_never_displaced_by_itself(store):
    """A displacement naming the page itself (two crawlers, one URL) is refused: it stands for itself."""
    o = _doc("o" * 32, STORY, 3)
    store.save_pages([_page(o)])
    keys = {"id": o.page_id, "url": o.url, "content_hash": o.content_hash, "simhash": o.simhash, "sketch": []}
    assert store.replace_original(o.page_id, keys, "exact") == o.page_id
    store.forward_copy(o.page_id, o.page_id, o.url, "passages")
    assert _state(store) == ([o.page_id], {}) and store.demotions.count_documents({}) == 0


@pytest.mark.parametrize("record_first", [True, False])
def test_a_copy_record_is_never_re_pointed_to_its_own_page(store, record_first):
    """Crawler 1 records P (day 2) a copy of O (its date unread); P's deferred decision, replayed, lets P
    displace O. The old record 'P copies O' must go, not become 'P copies P' (invariant seed 118)."""
    o, p = _doc("o" * 32, STORY, 8), _doc("p" * 32, STORY, 2)
    store.save_pages([_page(o)])
    keys = {"id": p.page_id, "url": p.url, "content_hash": p.content_hash, "simhash": p.simhash, "sketch": []}
    writes = [lambda: store.record_duplicates([_copy(p, o.page_id)]),
              lambda: (store.replace_original(o.page_id, keys, "exact"), store.save_pages([_page(p)]))]
    for write in (writes if record_first else writes[::-1]):
        write()
    pages, copies = _state(store)
    assert pages == [p.page_id] and copies == {o.page_id: p.page_id}, (pages, copies)


def test_a_record_re_pointed_before_its_page_landed_is_dropped_when_it_lands(store):
    """The replay forwards C to P without P's URL (P's save on its way); P's URL was recorded a copy of C by
    another crawler. When P lands, the record 'P copies P' is found and dropped (invariant seed 138)."""
    c, p = _doc("c" * 32, STORY, None), _doc("p" * 32, STORY, None)
    store.save_pages([_page(c)])
    store.record_duplicates([{**_copy(p, c.page_id), "content_hash": p.content_hash}])
    store.pages.delete_one({"_id": store.pages.find_one({"url": c.url})["_id"]})   # C demoted by the replay
    store.forward_copy(c.page_id, p.page_id, None, "passages")
    store.save_pages([_page(p)])
    pages, copies = _state(store)
    assert pages == [p.page_id] and p.page_id not in copies, (pages, copies)


def test_a_displacement_cut_short_by_a_kill_is_finished_by_the_next_open(store):
    """A crawler wrote O's displacement marker (E published earlier) and was SIGKILLed before moving O or
    re-pointing O's copies: the next process to open the store finishes it (invariant seed 121)."""
    from storage import open_store

    late, early, copy = _doc("o" * 32, STORY, 20), _doc("e" * 32, STORY, 10), _doc("c" * 32, STORY, None)
    store.save_pages([_page(late), _page(early)])
    store.duplicates.insert_one({"url": copy.url, "original_id": late.page_id, "method": "exact", "distance": 0})
    store.demotions.insert_one({"_id": late.page_id, "by": early.page_id, "by_url": early.url, "by_keys": None,
                                "method": "exact", "distance": 0, "coverage": None})
    again = open_store(store.config)
    try:
        pages, copies = _state(again)
    finally:
        again.close()
    assert pages == [early.page_id] and copies == {late.page_id: early.page_id, copy.page_id: early.page_id}


def test_a_copy_checked_while_a_displacement_hands_over_still_finds_the_story(store):
    """While O (earlier) takes R's place, R's index entries go to O: a copy checked at any moment of that
    hand-over finds one of them. Before, R's entries left first and O's came one MongoDB read later: a copy
    checked in between was kept as a new story (invariant seed 141)."""
    late, early = _doc("r" * 32, STORY, 20), _doc("o" * 32, STORY, 10)
    engine = _engine(store)
    engine.decide(late)
    store.save_pages([_page(late)])
    seen: list[str] = []
    for name in ("remove", "transfer"):
        real = getattr(store.index, name)

        def spy(*args, _real=real, **kwargs):
            out = _real(*args, **kwargs)
            seen.append(store.lookup(late.content_hash, late.simhash).kind)   # another crawler's check, now
            return out
        setattr(store.index, name, spy)
    assert engine.decide(early).replaced == late.page_id
    assert seen and "new" not in seen, seen


def test_an_unsaved_page_without_a_sketch_is_still_displaced_by_its_date(store):
    """A short dated page (no passage sketch, so no passage claim) kept by crawler 1 and not saved yet: its
    date still reaches crawler 2, whose earlier-published copy takes its place."""
    short = "国家统计局昨日发布数据，前三季度国内生产总值同比增长百分之五点二。"
    late = DedupDoc.of("r" * 32, short, NearDupParams(), published=dt.date(2024, 5, 20), url="http://127.0.0.1/r.html")
    early = DedupDoc.of("o" * 32, short, NearDupParams(), published=dt.date(2024, 5, 10), url="http://127.0.0.1/o.html")
    late, early = (dataclasses.replace(d, sketch=()) for d in (late, early))
    _engine(store).decide(late)
    assert _engine(store).decide(early).replaced == late.page_id


class _Killed(BaseException):
    """A SIGKILL at this point of a crawler's writes (nothing of ours catches it; nothing after it runs)."""


def _passage_story() -> tuple[str, str]:
    """A story's text and a copy of it that only aligned passages find."""
    from tests.reliability.reliability_helpers import make_stories, passage_copy

    paragraphs = make_stories(1, seed=315)[0][1]
    return "\n".join(paragraphs), "\n".join(passage_copy(paragraphs, 0))


@pytest.mark.parametrize("killed_after", ["check_and_insert", "claim_sketch"])
def test_a_decision_a_killed_crawler_left_half_done_is_made_in_full_by_the_next(store, killed_after):
    """Crawler A indexed a passage copy C (its exact and SimHash entries, maybe its sketch claim) and was
    SIGKILLed before the passage step took them back; crawler B fetches C again. C's own exact entry is
    no 'unchanged' re-crawl (its page was never saved): C is decided in full and found a copy. Before, B
    stored C as 'unchanged', a second page of the story (invariant seed 315)."""
    text, copied = _passage_story()
    original = DedupDoc.of("o" * 32, text, NearDupParams(), published=dt.date(2024, 5, 16), url="http://127.0.0.1/o.html")
    copy = DedupDoc.of("c" * 32, copied, NearDupParams(), url="http://127.0.0.1/c.html")
    assert _engine(store).decide(original).kind == "new"
    store.save_pages([_page(original)])
    index = RedisDedupIndex(store)                          # crawler A
    assert index.check_and_insert(copy).kind == "new"
    if killed_after == "claim_sketch":
        index.claim_sketch(copy, NearDupParams().min_shared)
    verdict = _engine(store).decide(copy)                    # crawler B, same URL, same page id
    assert (verdict.kind, verdict.method, verdict.original) == ("near", "passages", original.page_id), verdict
    assert _engine(store).decide(original).kind == "unchanged"   # a real re-crawl stays unchanged


def test_a_displacement_killed_before_its_hand_over_leaves_no_claim_of_a_vanished_page(store):
    """Crawler A's earlier-published E displaces its saved page R and is SIGKILLed before R's index entries
    are handed over to E. R must not be gone from MongoDB while its passage claim stays in Redis: a later
    passage copy would then wait forever for R's text (its decision spooled again at every replay, the copy
    kept as a second page of the story: invariant seed 315). The next open finishes the displacement."""
    from storage import open_store

    text, copied = _passage_story()
    late = DedupDoc.of("r" * 32, text, NearDupParams(), published=dt.date(2024, 5, 14), url="http://127.0.0.1/r.html")
    early = DedupDoc.of("e" * 32, text, NearDupParams(), published=dt.date(2024, 5, 10), url="http://127.0.0.1/e.html")
    copy = DedupDoc.of("c" * 32, copied, NearDupParams(), url="http://127.0.0.1/c.html")
    assert _engine(store).decide(late).kind == "new"
    store.save_pages([_page(late)])

    def killed(*args, **kwargs):
        raise _Killed
    store._hand_over = killed                                 # crawler A dies here
    with pytest.raises(_Killed):
        _engine(store).decide(early)
    again = open_store(store.config)                          # the re-run opens the store
    try:
        again.save_pages([_page(early)])                      # and stores E
        verdict = _engine(again).decide(copy)
        assert (verdict.kind, verdict.original, verdict.spooled) == ("near", early.page_id, False), verdict
        pages, copies = _state(again)
        assert pages == [early.page_id] and copies == {"r": early.page_id}   # R's URL, E's page id
    finally:
        again.close()


def test_a_passage_copy_that_takes_the_originals_place_can_be_verified_before_its_save_lands(store):
    """E (a passage copy of R, published earlier) is found a copy, its claim taken back and its text marked
    withdrawn, then it displaces R and the hand-over claims its sketch again. A copy P checked before E's save
    lands sees E's claim: it must read E's text, not 'withdrawn' (no such page: P was kept as a second page
    of the story; invariant seed 311, cluster, no fault, one crawler)."""
    from tests.reliability.reliability_helpers import make_stories, passage_copy

    paragraphs = make_stories(1, seed=311)[0][1]
    late = DedupDoc.of("r" * 32, "\n".join(paragraphs), NearDupParams(), published=dt.date(2024, 5, 16),
                       url="http://127.0.0.1/r.html")
    early = DedupDoc.of("e" * 32, "\n".join(passage_copy(paragraphs, 1)), NearDupParams(),
                        published=dt.date(2024, 5, 15), url="http://127.0.0.1/e.html")
    copy = DedupDoc.of("p" * 32, "\n".join(passage_copy(paragraphs, 2)), NearDupParams(), url="http://127.0.0.1/p.html")
    engine = _engine(store)
    assert engine.decide(late).kind == "new"
    verdict = engine.decide(early)
    assert (verdict.method, verdict.replaced) == ("passages", late.page_id), verdict
    verdict = _engine(store).decide(copy)                    # E's save has not landed
    assert (verdict.kind, verdict.original) == ("near", early.page_id), verdict


WEATHER = ("气象部门预计，本周后半段将有一股较强冷空气自西向东影响我国大部分地区，气温普遍下降六到八摄氏度，局地降温幅度可达十度以上。"
           "农业专家提醒，北方冬小麦产区应提前做好防寒准备，设施农业要加固大棚，防范大风和降雪带来的不利影响。"
           "交通运输部门表示，将密切关注天气变化，及时发布出行提示，保障重点路段和枢纽的安全畅通。")
LIBRARY = ("图书馆今年新增藏书三万余册，涵盖文学、历史、科技等多个门类，并开设了面向青少年的阅读推广活动。"
           "馆方介绍，数字阅读平台的注册用户已突破十万人，线上讲座和读书会吸引了大量市民参与。")


@pytest.mark.parametrize("redis_mode", ["single", "cluster"])
def test_a_copy_of_a_displaced_page_is_a_copy_of_the_page_that_displaced_it(store):
    """D is kept; E, most of D and published earlier, displaces it (a near copy, 14 bits from what comes next).
    D's text still stands for the story: a near copy N of D and a verbatim copy V, crawled afterwards, are
    copies of E. Before, D's entries left the index at the hand-over: N was kept as a story of its own and V
    recorded as N's copy (invariant seed 315). The texts were chosen on the fingerprints without the thesaurus
    (E is D's near copy by 3 SimHash bits there, 13 with synonyms canonicalised): the hand-over is measured on those."""
    with synonyms_enabled(False):
        _copy_of_a_displaced_page(store)


def _copy_of_a_displaced_page(store) -> None:
    sentences = [s + "。" for s in (STORY + OTHER + WEATHER + LIBRARY).split("。") if s]
    d = _doc("d" * 32, "".join(sentences), 20)
    e = _doc("e" * 32, "".join(sentences[i] for i in (0, 1, 2, 3, 4, 5, 6, 9)), 1)
    n = _doc("a" * 32, d.text.replace("十二条", "十三条"), 25)
    v = _doc("b" * 32, d.text, 26)
    engine = _engine(store)
    assert engine.decide(d).kind == "new"
    store.save_pages([_page(d)])
    assert engine.decide(e).replaced == d.page_id
    store.save_pages([_page(e)])
    for copy in (n, v):
        verdict = engine.decide(copy)
        assert verdict.is_duplicate and verdict.original == e.page_id, verdict
        store.record_duplicates([{**_copy(copy, verdict.original), "content_hash": copy.content_hash}])
    assert _state(store) == ([e.page_id], {d.page_id: e.page_id, n.page_id: e.page_id, v.page_id: e.page_id})
    health = store.index_health()["simhash"]    # two entries: E's, and D's answering for E
    assert health == {"mongo": 2, "redis": 2}, health
    store.rebuild_index()                       # MongoDB holds the displaced page's entries too
    assert store.lookup(n.content_hash, n.simhash).original_id == e.page_id


@pytest.mark.parametrize("copy", ["exact", "near"])
@pytest.mark.parametrize("landed", ["before", "after"])
def test_a_displaced_pages_entry_is_counted_once_whatever_the_displacer_shares(store, copy, landed):
    """E, published earlier, displaces D: an exact copy (D's entry is E's own: MongoDB counts one entry) or a
    near copy (D's entry answers for E: two). D's save lands before or after the displacement; E's lands last,
    so the move reads E's keys from the marker (its page is not in MongoDB yet). What MongoDB counts must be
    what Redis holds, else the next open repairs an index that was right."""
    sentences = [s + "。" for s in (STORY + OTHER + WEATHER + LIBRARY).split("。") if s]
    engine = _engine(store)
    with synonyms_enabled(False):   # E is D's near copy on these texts without the thesaurus (test above)
        d = _doc("d" * 32, "".join(sentences), 20)
        e = _doc("e" * 32, d.text if copy == "exact" else "".join(sentences[i] for i in (0, 1, 2, 3, 4, 5, 6, 9)), 1)
        assert engine.decide(d).kind == "new"
        if landed == "before":
            store.save_pages([_page(d)])
        assert engine.decide(e).replaced == d.page_id
        if landed == "after":
            store.save_pages([_page(d)])
    store.save_pages([_page(e)])
    assert _state(store) == ([e.page_id], {d.page_id: e.page_id})
    entries = 1 if copy == "exact" else 2
    assert store.index_health()["simhash"] == {"mongo": entries, "redis": entries}


def test_two_crawlers_joining_one_story_at_once_keep_one_page(store):
    """Crawler 1 joins U (undated) and D (dated) while crawler 2 joins them the other way round, inside crawler
    1's displacement. Before, an undated pair went to "the second page asked": each crawler displaced a
    different page, the markers formed a cycle and both pages left `pages` (invariant seed 804: a story lost)."""
    u, d = _doc("u" * 32, STORY, None), _doc("d" * 32, STORY, 12)
    store.save_pages([_page(u), _page(d)])
    real, calls = store.replace_original, []

    def crawler_2_meanwhile(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 1:
            store._join(d.page_id, u.page_id, "near")   # the other crawler, the other way round
        return real(*args, **kwargs)
    store.replace_original = crawler_2_meanwhile
    store._join(u.page_id, d.page_id, "near")
    pages, copies = _state(store)
    assert pages == [u.page_id] and copies == {d.page_id: u.page_id}, (pages, copies)


@pytest.mark.parametrize("saved_after", [0.0, 0.3])
def test_a_join_waits_for_the_save_of_the_page_that_stands_in_another_crawlers_flight(store, store_config,
                                                                                      saved_after):
    """Invariant seed 7634 (two crawlers, no fault): crawler A's W (day 17) tells the story of E (day 14), which
    crawler B has just kept: E's claim is in Redis, its save not landed, its keys in B's memory only. The join
    gave up ("neither its page nor its keys can be read") and both pages stood until the next crawl's repair.
    It now awaits B's save and lets E stand, whether the save lands while it waits or just before."""
    from storage import open_store

    e, w = _doc("e" * 32, STORY, 14), _doc("w" * 32, STORY, 17)
    b = open_store(store_config)   # crawler B: its own process, its own pages in flight
    try:
        assert _engine(b).decide(e).kind == "new"
        assert b.inflight.get(e.page_id) is not None and store.inflight.get(e.page_id) is None
        store.save_pages([_page(w)])
        saver = threading.Timer(saved_after, b.save_pages, [[_page(e)]])
        saver.start()
        try:
            assert store._join(w.page_id, e.page_id, "passages")
        finally:
            saver.join()
    finally:
        b.close()
    pages, copies = _state(store)
    assert pages == [e.page_id] and copies == {w.page_id: e.page_id}, (pages, copies)


def _claimed_by_a_crawler_that_died(store, store_config, monkeypatch) -> tuple[DedupDoc, DedupDoc]:
    """(E, W) of one story: E (day 14) kept by crawler B, which closed before its save (E's claim stays in
    Redis); W (day 17) saved by this store. Joins wait for E's save for a few milliseconds only."""
    import storage.kept
    from storage import open_store

    monkeypatch.setattr(storage.kept, "SETTLE_POLL", (0.01, 0.02))
    e, w = _doc("e" * 32, STORY, 14), _doc("w" * 32, STORY, 17)
    b = open_store(store_config)
    try:
        assert _engine(b).decide(e).kind == "new"
    finally:
        b.close()
    store.save_pages([_page(w)])
    return e, w


def test_a_join_whose_standing_page_never_lands_defers_the_decision(store, store_config, monkeypatch):
    """B kept E and died before its save: A's join cannot be made now, and says so; the engine's join raises
    LookupUnavailable, so A's page is decided again by the spool replay rather than left standing beside E."""
    e, w = _claimed_by_a_crawler_that_died(store, store_config, monkeypatch)
    assert store._join(w.page_id, e.page_id, "passages") is False
    with pytest.raises(LookupUnavailable, match="cannot be read yet"):
        RedisDedupIndex(store).join(w, e.page_id, "passages")
    assert _state(store) == ([w.page_id], {})


def test_a_cycle_of_displacements_leaves_one_page(store):
    """Markers A -> B and B -> A (however they came): settling keeps exactly one of the two pages, the same one
    whichever page is settled first; before, both moved to duplicates and the story was lost."""
    a, b = _doc("a" * 32, STORY, 3), _doc("b" * 32, STORY, 3)
    store.save_pages([_page(a), _page(b)])
    for old, new in ((a, b), (b, a)):
        store.demotions.insert_one({"_id": old.page_id, "by": new.page_id, "by_url": new.url, "by_keys": None,
                                    "method": "near", "distance": 1, "coverage": None})
    store.settle_pages([store.get_page(b.page_id) or {"_id": b.page_id}, store.get_page(a.page_id) or {"_id": a.page_id}])
    pages, copies = _state(store)
    assert pages == [a.page_id] and copies == {b.page_id: a.page_id}, (pages, copies)


def test_settling_copies_inside_a_cycle_keeps_the_record_of_a_page_already_moved_out(store):
    """Seed 1024 (stale, redis_wipe, two crawlers): the spool replay found page A (undated) a copy of B and
    moved it out (record A -> B, page deleted, marker A -> B) while another crawler joined them the other way
    (B -> A, undated stands). Settling B's copies followed B -> A -> B, took A for the page that stands and
    deleted A's record as "its own": A was then neither a page nor a copy. The cycle is broken first (the
    page MongoDB still holds stands), so A's record stays, pointing to B."""
    a, b = _doc("a" * 32, STORY, None), _doc("b" * 32, STORY, 11)
    store.save_pages([_page(b)])
    store.duplicates.insert_one({**_copy(a, b.page_id), "original_url": b.url})
    for old, new in ((a, b), (b, a)):
        store.demotions.insert_one({"_id": old.page_id, "by": new.page_id, "by_url": new.url, "by_keys": None,
                                    "method": "near", "distance": 1, "coverage": None})
    store.settle_copies([b.page_id])
    pages, copies = _state(store)
    assert pages == [b.page_id] and copies == {a.page_id: b.page_id}, (pages, copies)


def test_the_repair_gives_no_passage_claims_to_pages_the_spool_replay_decides(store):
    """Seed 1129 (embedded, redis_wipe): after a Redis wipe the repair re-claimed the sketches of every page,
    the spooled (undecided) ones too. Replayed first, the original O (dated) met U, an undecided later copy, took
    it for an original and displaced it, and stood beside the undated page it copies. Like their SimHash
    entries, undecided pages' sketches wait for their own replayed decision."""
    kept, undecided = _doc("k" * 32, STORY, None), _doc("u" * 32, STORY, 21)
    store.save_pages([_page(kept), _page(undecided)])
    store.sketches.clear()                                   # Redis came back empty
    store.reconcile_index(exclude={undecided.page_id})
    probe = _doc("p" * 32, STORY, 19)
    _, candidates = store.claim_sketch(probe.page_id, list(probe.sketch), 2)
    assert {c[0] for c in candidates} == {kept.page_id}, candidates


def test_a_page_in_flight_gets_its_passage_claim_back_after_a_loss_that_spared_its_simhash_entry(store):
    """Redis came back having lost the last second's writes: the refill from MongoDB re-added the page's SimHash
    entry but no sketches (some had survived), and the in-flight refill skipped the page (its SimHash entry
    answered for it), so a later copy could miss this page by passages. Every page in flight gets its claim back.
    (Found reading invariant seed 1286, which fails for other reasons too: issue 31.)"""
    engine = _engine(store)
    page = _doc("c" * 32, STORY, 13)
    assert engine.decide(page).kind == "new"
    store.sketches.unclaim(page.page_id, list(page.sketch))     # the claim was in the lost second
    store._refill_inflight()
    probe = _doc("p" * 32, STORY, 11)
    _, candidates = store.claim_sketch(probe.page_id, list(probe.sketch), 2)
    assert page.page_id in {c[0] for c in candidates}, candidates


def _spooled_by_another_crawler(store, *entries: tuple[str, dict]) -> None:
    """Spool entries as a crawler that has stopped left them (its own file, replayed by the next open)."""
    from bson import json_util

    store.spool.dir.mkdir(parents=True, exist_ok=True)
    (store.spool.dir / "other-1-1.jsonl").write_text(
        "".join(json_util.dumps({"op": op, "args": args}) + "\n" for op, args in entries))


def test_no_process_indexes_a_page_whose_decision_waits_in_another_crawlers_spool(store):
    """Seed 1286 (redis, redis_kill, two crawlers): crawler A kept page U undecided (Redis away) and spooled its
    decision; crawler B's repair after the loss re-added U from MongoDB, knowing nothing of A's spool, and a
    later page took U for an original. The page carries the mark in MongoDB, so every repair leaves it out
    until the replay decides it; the replay clears the mark."""
    from pipelines.store import StorePipeline

    kept, undecided = _doc("k" * 32, OTHER, None), _doc("u" * 32, STORY, 12)
    doc = StorePipeline.document({**_page(undecided), "page_id": undecided.page_id,
                                  "dedup": {"kind": "new", "spooled": True}})
    assert doc["undecided"] is True and "dedup" not in doc
    store.save_pages([_page(kept), doc])
    store.index.clear()
    store.sketches.clear()                                   # Redis came back empty
    store.reconcile_index()                                  # crawler B: no spool of its own
    probe = _doc("p" * 32, STORY, 11)
    assert store.lookup(probe.content_hash, probe.simhash).kind == "new"
    _, candidates = store.claim_sketch(probe.page_id, list(probe.sketch), 2)
    assert undecided.page_id not in {c[0] for c in candidates}, candidates
    store.sketches.unclaim(probe.page_id, list(probe.sketch))
    _spooled_by_another_crawler(store, ("index", {"page_id": undecided.page_id, "k": store.config.simhash_k,
                                                  "content_hash": undecided.content_hash,
                                                  "simhash": undecided.simhash}))
    assert store.status()["counts"]["undecided"] == 1
    store.replay_spool()                                     # crawler A's decision: new, and indexed now
    assert "undecided" not in store.get_page(undecided.page_id) and store.status()["counts"]["undecided"] == 0
    assert store.lookup(probe.content_hash, probe.simhash).original_id == undecided.page_id


def test_the_page_that_displaced_an_undecided_one_takes_over_its_open_decision(store):
    """Seed 1286: U (day 12) was indexed, then Redis went away before its passage step, so its decision was
    spooled. E (day 11), the same text, found U by SimHash and displaced it: E stood without any passage step.
    The replay found U gone and decided nothing, so P (day 13), a passage copy kept earlier, stood beside E.
    The replay decides E instead: E finds P by passages and takes its place."""
    text, copied = _passage_story()
    passage = DedupDoc.of("p" * 32, copied, NearDupParams(), published=dt.date(2024, 5, 13), url="http://127.0.0.1/p.html")
    undecided = DedupDoc.of("u" * 32, text, NearDupParams(), published=dt.date(2024, 5, 12), url="http://127.0.0.1/u.html")
    early = DedupDoc.of("e" * 32, text, NearDupParams(), published=dt.date(2024, 5, 11), url="http://127.0.0.1/e.html")
    assert _engine(store).decide(passage).kind == "new"
    store.save_pages([_page(passage)])
    assert RedisDedupIndex(store).check_and_insert(undecided).kind == "new"   # then Redis went away
    store.save_pages([{**_page(undecided), "undecided": True}])
    verdict = _engine(store).decide(early)
    assert (verdict.kind, verdict.replaced) == ("new", undecided.page_id), verdict
    store.save_pages([_page(early)])
    _spooled_by_another_crawler(store, ("recheck", {"page_id": undecided.page_id, "k": store.config.simhash_k,
                                                    "why": "passage claim: Redis away"}))
    store.replay_spool()
    pages, copies = _state(store)
    assert pages == [early.page_id], (pages, copies)
    assert copies == {"p": early.page_id, "u": early.page_id}, copies


def test_a_repair_after_a_total_loss_reclaims_sketches_that_a_claim_made_since_hides(store):
    """Redis restarted empty and another crawler claimed a sketch before this repair ran: the sketch repair
    saw a claim counter and took the sketches for whole, so every stored page lost its passage claim. With
    no owner key the index lost its data since its last repair: everything is re-added."""
    from storage.identity import owner_key

    kept = _doc("k" * 32, STORY, None)
    store.save_pages([_page(kept)])
    store.reconcile_index()
    store.index.clear()
    store.sketches.clear()
    store.redis.delete(owner_key(store.config.key_prefix))   # Redis came back empty
    other = _doc("o" * 32, OTHER, None)
    store.claim_sketch(other.page_id, list(other.sketch), 2)  # another crawler, first after the restart
    store.reconcile_index()
    probe = _doc("p" * 32, STORY, 11)
    _, candidates = store.claim_sketch(probe.page_id, list(probe.sketch), 2)
    assert kept.page_id in {c[0] for c in candidates}, candidates


def test_a_dated_copy_of_an_undated_page_still_deciding_is_decided_again_when_that_page_turns_out_a_copy(store):
    """Seed 1286, story 6: P (day 18), a passage copy, was kept. N (undated) was indexed and its passage step
    was still running when O (day 14) found N by its exact hash: undated, N stood by being first, so O was
    dropped as N's copy. N's passage step then found N a copy of P, and P (day 18) stood for a story whose
    earliest page, O, had been dropped. O now waits for N's decision to end, and is decided again."""
    text, copied = _passage_story()
    passage = DedupDoc.of("p" * 32, copied, NearDupParams(), published=dt.date(2024, 5, 18), url="http://127.0.0.1/p.html")
    undated = DedupDoc.of("n" * 32, text, NearDupParams(), url="http://127.0.0.1/n.html")
    early = DedupDoc.of("o" * 32, text, NearDupParams(), published=dt.date(2024, 5, 14), url="http://127.0.0.1/o.html")
    assert _engine(store).decide(passage).kind == "new"
    store.save_pages([_page(passage)])
    assert RedisDedupIndex(store).check_and_insert(undated).kind == "new"   # N's passage step still to come
    seen = []

    class Interleaved(RedisDedupIndex):
        def settled(self, page_id):
            if not seen:                                    # N's decision ends while O waits for it
                seen.append(_engine(store).decide(undated))
            return super().settled(page_id)

    verdict = DedupEngine(NearDupParams(k=store.config.simhash_k), Interleaved(store)).decide(early)
    assert (seen[0].kind, seen[0].original) == ("near", passage.page_id), seen
    assert (verdict.kind, verdict.replaced) == ("new", passage.page_id), verdict
    store.save_pages([_page(early)])
    store.record_duplicates([_copy(undated, passage.page_id)])
    pages, copies = _state(store)
    assert pages == [early.page_id] and copies == {"p": early.page_id, "n": early.page_id}, (pages, copies)


def test_a_dated_copy_of_an_undated_page_kept_undecided_waits_for_its_decision_in_the_replay(store):
    """Seed 4003 (cluster, redis_wipe, three crawlers): U (undated) and A (day 12, the same text) were kept with
    their decisions spooled; B (day 14), a passage copy, stood. The replay decided A first: U was undated, so A
    was dropped as U's copy; then U was found a copy of B, and A's record followed U to B, which stood for a
    story whose earliest page is A. A now waits until U's decision, later in the spool, is made."""
    text, copied = _passage_story()
    late, undated, early = _doc("b" * 32, copied, 14), _doc("u" * 32, text, None), _doc("a" * 32, text, 12)
    assert _engine(store).decide(late).kind == "new"
    store.save_pages([_page(late)])
    assert RedisDedupIndex(store).check_and_insert(undated).kind == "new"   # then its passage claim failed
    store.save_pages([{**_page(undated), "undecided": True}, {**_page(early), "undecided": True}])
    with pytest.raises(LookupUnavailable):                   # a crawl's check waits for U's decision too
        RedisDedupIndex(store).settled(undated.page_id)
    _spooled_by_another_crawler(store, *(("recheck", {"page_id": d.page_id, "k": store.config.simhash_k,
                                                      "why": "passage claim: Redis away"}) for d in (early, undated)))
    assert store.replay_spool()["failed"] == 0
    pages, copies = _state(store)
    assert pages == [early.page_id] and copies == {late.page_id: early.page_id, undated.page_id: early.page_id}, \
        (pages, copies)


@pytest.mark.parametrize("join_first", [False, True])
def test_a_page_kept_undecided_stands_for_no_other_until_its_own_decision(store, join_first):
    """Seed 9201 (embedded, redis_wipe, two crawlers): D (day 12) stood; C (day 6) and U (undated), the same
    story, were kept with their decisions spooled. Another crawler recorded U's URL a copy of C, and that record's
    join made U stand over C (of an undated and a dated page the undated one stands). U's replayed decision then
    found U a copy of D, and C's record followed U to D, which stood for a story whose earliest page is C. The
    join, which would keep U, now waits in the spool until U's own decision is made, in either spool order."""
    late, early, undated = _doc("d" * 32, STORY, 12), _doc("c" * 32, STORY, 6), _doc("u" * 32, STORY, None)
    assert _engine(store).decide(late).kind == "new"
    store.save_pages([_page(late)])
    store.save_pages([{**_page(early), "undecided": True}, {**_page(undated), "undecided": True}])
    checks = [("recheck", {"page_id": d.page_id, "k": store.config.simhash_k, "why": "Redis away"})
              for d in (early, undated)]
    store.record_duplicates([{**_copy(undated, early.page_id), "content_hash": undated.content_hash}])
    assert store.spool.count() == 1 and store.demotions.count_documents({}) == 0   # the join waits
    store.spool.rotate()
    joins = [e for p in store.spool.pending() for e in store.spool.entries(p)]
    assert [e["op"] for e in joins] == ["join_pages"], joins
    for p in store.spool.pending():
        p.unlink()
    _spooled_by_another_crawler(store, *([(e["op"], e["args"]) for e in joins] + checks if join_first
                                         else checks + [(e["op"], e["args"]) for e in joins]))
    assert store.replay_spool()["failed"] == 0 and store.spool.count() == 0
    pages, copies = _state(store)
    assert pages == [early.page_id] and copies == {late.page_id: early.page_id, undated.page_id: early.page_id}, \
        (pages, copies)


def test_a_join_that_takes_an_undecided_page_for_the_copy_is_made_at_once(store):
    """Only the page that would stand waits for its own decision: U (day 9), kept undecided and recorded a copy of
    C (day 6) by another crawler, becomes C's copy at once. So two undecided pages joined from their two decisions
    cannot wait for each other."""
    early, later = _doc("c" * 32, STORY, 6), _doc("u" * 32, STORY, 9)
    assert _engine(store).decide(early).kind == "new"
    store.save_pages([_page(early), {**_page(later), "undecided": True}])
    store.record_duplicates([{**_copy(later, early.page_id), "content_hash": later.content_hash}])
    assert store.spool.count() == 0
    assert _state(store) == ([early.page_id], {later.page_id: early.page_id})


def test_a_decision_that_waits_for_a_page_no_replay_here_decides_stays_in_the_spool(store):
    """U's decision is in a spool this replay does not hold (a crawler still running): A's waits with it, in
    the spool, said in the log; A stays kept undecided, out of every index repair, until a replay decides it."""
    undated, early = _doc("u" * 32, STORY, None), _doc("a" * 32, STORY, 12)
    assert RedisDedupIndex(store).check_and_insert(undated).kind == "new"
    store.save_pages([{**_page(undated), "undecided": True}, {**_page(early), "undecided": True}])
    _spooled_by_another_crawler(store, ("recheck", {"page_id": early.page_id, "k": store.config.simhash_k,
                                                    "why": "Redis away"}))
    stats = store.replay_spool()
    assert (stats["failed"], stats["replayed"]) == (1, 0), stats
    store.spool.rotate()
    assert [e["args"]["page_id"] for p in store.spool.pending() for e in store.spool.entries(p)] == [early.page_id]
    assert store.get_page(early.page_id)["undecided"] is True


def test_a_copy_published_earlier_waits_for_the_date_of_an_original_whose_save_is_on_its_way(store):
    """Seed 1339 (cluster, crawler_kill): R (day 19) was indexed by another crawler, its date not in Redis yet
    (the passage claim carries it) nor its page in MongoDB. O (day 16), the same text, read R's date as unknown,
    so R stood by being first and O was dropped. O now waits for R's decision to end and reads its date then."""
    late, early = _doc("r" * 32, STORY, 19), _doc("o" * 32, STORY, 16)
    assert RedisDedupIndex(store).check_and_insert(late).kind == "new"   # the other crawler, mid-decision

    class Interleaved(RedisDedupIndex):
        def settled(self, page_id):
            store.save_pages([_page(late)])                  # R's save lands while O waits
            return super().settled(page_id)

    verdict = DedupEngine(NearDupParams(k=store.config.simhash_k), Interleaved(store)).decide(early)
    assert (verdict.kind, verdict.replaced) == ("new", late.page_id), verdict


def test_a_page_another_crawler_decided_is_not_decided_again_by_a_spooled_check(store):
    """Seed 1341 (embedded, redis_wipe, two crawlers): crawler A kept F (new) and dropped N as F's passage copy;
    crawler B fetched both while Redis was away, saved them undecided and spooled their checks. B's save took
    F's decided state away, so the repair after the wipe left F out of the index and the replay decided N
    first: N new, then F a copy of N, and N's copy record re-pointed to N itself (the story stored 0 times).
    A save never marks a decided page undecided, and the replay leaves a page decided meanwhile as it is."""
    from storage.identity import owner_key

    text, copied = _passage_story()
    first = DedupDoc.of("f" * 32, text, NearDupParams(), url="http://127.0.0.1/f.html")
    copy = DedupDoc.of("n" * 32, copied, NearDupParams(), url="http://127.0.0.1/n.html")
    engine = _engine(store)
    assert engine.decide(first).kind == "new"                  # crawler A
    store.save_pages([_page(first)])
    verdict = engine.decide(copy)
    assert verdict.original == first.page_id, verdict
    store.record_duplicate({**_copy(copy, first.page_id), "method": "passages", "content_hash": copy.content_hash})
    saved = [{**_page(copy), "undecided": True}, {**_page(first), "undecided": True}]   # crawler B, Redis away:
    store._save_pages(saved)                                 # its settle step (the join with N's record) spooled
    assert "undecided" not in store.get_page(first.page_id)   # decided by A: B's save leaves it decided
    store.index.clear()
    store.sketches.clear()
    store.redis.delete(owner_key(store.config.key_prefix))     # Redis wiped
    checks = (("index", {"page_id": d.page_id, "k": store.config.simhash_k, "content_hash": d.content_hash,
                         "simhash": d.simhash}) for d in (copy, first))
    _spooled_by_another_crawler(store, *checks, ("settle_pages", {"ids": [d["_id"] for d in saved]}))
    store.replay_spool()
    pages, copies = _state(store)
    assert pages == [first.page_id], (pages, copies)
    assert copies == {"n": first.page_id}, copies


@pytest.mark.parametrize("held, text, expect", [("decided", STORY, False), ("decided", OTHER, True),
                                                 ("undecided", STORY, True)])
def test_an_undecided_save_never_undoes_a_decision_made_meanwhile(store, held, text, expect):
    """A page saved undecided over the same page: over the same text decided by another crawler it stays
    decided; over changed text (a re-crawl) it waits for its own decision; over a page still undecided too."""
    page, again = _doc("u" * 32, STORY, None), _doc("u" * 32, text, None)
    store.save_pages([{**_page(page), "undecided": held == "undecided"}])
    store.save_pages([{**_page(again), "undecided": True}])
    saved = store.get_page(page.page_id)
    assert bool(saved.get("undecided")) is expect and saved["content_hash"] == again.content_hash, saved


@pytest.mark.parametrize("redis_mode", ["single", "cluster"])
def test_a_displacer_sharing_a_displaced_pages_fingerprint_owns_that_entry(store, redis_mode):
    """bench_crawl with dates, about one run in two: L (day 10) was kept; M (day 9, a passage copy) displaced it, so
    L's SimHash entry answered for M; E (day 5), with L's very SimHash, found M through it and displaced M. E's own
    entry could not be added (L's held that fingerprint) and L's still answered for M, a page moved out; MongoDB
    counted L's entry and E's as two, so every later open found the index one page short and re-added the whole
    store. E owns the entry now, and MongoDB counts it once."""
    import hashlib

    text, copied = _passage_story()
    late = DedupDoc.of("l" * 32, text, NearDupParams(), published=dt.date(2024, 5, 10), url="http://127.0.0.1/l.html")
    middle = DedupDoc.of("m" * 32, copied, NearDupParams(), published=dt.date(2024, 5, 9), url="http://127.0.0.1/m.html")
    early = dataclasses.replace(late, page_id="e" * 32, text=text + "。", url="http://127.0.0.1/e.html",
                                content_hash=hashlib.md5((text + "。").encode()).hexdigest(),
                                published=dt.date(2024, 5, 5))
    engine = _engine(store)
    for doc, replaced in ((late, None), (middle, late.page_id), (early, middle.page_id)):
        verdict = engine.decide(doc)
        assert (verdict.kind, verdict.replaced) == ("new", replaced), verdict
        store.save_pages([_page(doc)])
    pages, copies = _state(store)
    assert pages == [early.page_id] and copies == {"l": early.page_id, "m": early.page_id}, (pages, copies)
    assert store.index.check("", early.content_hash, early.simhash, 0, False).original_id == early.page_id
    assert store.index.count() == store._index_size()


@pytest.mark.parametrize("story", ["a copy", "new"])
def test_a_page_undecided_for_long_whose_spool_is_elsewhere_is_decided_at_open(store, story):
    """Crawler A, on another machine, kept U undecided (Redis away) and never ran again: its spool is on A's disk.
    U stayed out of every index for good, so a copy of U crawled later was kept, and a U that copies a stored
    story was never moved out. The next open here takes over U's decision once U has waited
    adopt_undecided_seconds; the mark's time moves on, so one process takes it."""
    kept = _doc("k" * 32, STORY, None)
    undecided = _doc("u" * 32, STORY if story == "a copy" else OTHER, None)
    store.save_pages([_page(kept)])
    assert _engine(store).decide(kept).kind == "new"
    long_ago = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=store.config.adopt_undecided_seconds + 60)
    store.save_pages([{**_page(undecided), "undecided": True, "undecided_since": long_ago}])
    assert store.replay_spool()["replayed"] == 1
    assert store.adopt_undecided() == []                      # taken: nothing left for another process
    pages, copies = _state(store)
    if story == "a copy":
        assert (pages, copies) == ([kept.page_id], {undecided.page_id: kept.page_id})
    else:
        assert pages == [kept.page_id, undecided.page_id] and "undecided" not in store.get_page(undecided.page_id)
        probe = _doc("p" * 32, OTHER, None)
        assert store.lookup(probe.content_hash, probe.simhash).original_id == undecided.page_id


def test_a_page_undecided_only_for_a_while_waits_for_its_own_crawler(store):
    """A page kept undecided a moment ago is its crawler's to decide (its spool is replayed by its next run)."""
    page = _doc("u" * 32, STORY, None)
    store.save_pages([{**_page(page), "undecided": True}])
    assert store.adopt_undecided() == [] and store.get_page(page.page_id)["undecided"] is True


def test_a_candidate_displaced_while_a_page_compares_with_it_still_has_its_text(store):
    """bench_crawl with dates, one page in two runs: C listed L (saved, its claimed text dropped) among its passage
    candidates; E displaced L before C read L's text, so L was neither in Redis nor in MongoDB, and C's whole
    decision was deferred to the next open. L's text stays readable for a while after it moves out."""
    engine = _engine(store)
    late, early = _doc("l" * 32, STORY, 20), _doc("e" * 32, STORY, 10)
    assert engine.decide(late).kind == "new"
    store.save_pages([_page(late)])
    index = RedisDedupIndex(store)
    assert engine.decide(early).replaced == late.page_id
    assert store.get_page(late.page_id) is None
    assert index.text_of(late.page_id) == late.text


def test_a_page_this_process_decided_is_settled_before_its_save_lands(store):
    """A dated copy found this process's undated page N, whose save still waits in the group commit: N's decision
    is over (this process made it), so the copy need not poll MongoDB for up to 6 s until N's save lands."""
    index = RedisDedupIndex(store)
    engine = DedupEngine(NearDupParams(k=store.config.simhash_k), index)
    undated = _doc("n" * 32, STORY, None)
    assert engine.decide(undated).kind == "new"             # not saved yet
    assert index.settled(undated.page_id) is True
    other = RedisDedupIndex(store)                           # another crawler: it waits for the save
    store.save_pages([_page(undated)])
    assert other.settled(undated.page_id) is True


def _triangle() -> tuple[DedupDoc, DedupDoc, DedupDoc]:
    """P (day 18), N (day 12), O (day 15): O and N one story told twice (passages, SimHash far apart); P
    unrelated text whose SimHash is one bit from O's (so O finds P by SimHash and displaces it)."""
    story, edit = _passage_story()
    o = _doc("o" * 32, story, 15)
    n = dataclasses.replace(_doc("n" * 32, edit, 12), simhash=o.simhash ^ 0xFFFF)
    p = dataclasses.replace(_doc("p" * 32, OTHER * 3, 18), simhash=o.simhash ^ 1)
    return p, n, o


def test_a_page_that_displaces_by_simhash_joins_its_passage_relatives(store):
    """Invariant seed 1592: O displaced P (found by SimHash) and never compared its passages with N, kept
    before it: O and N, one story, both stood. O now joins N, the earlier published."""
    p, n, o = _triangle()
    engine = _engine(store)
    for doc in (p, n):
        assert engine.decide(doc).kind == "new"
        store.save_pages([_page(doc)])
    assert engine.decide(o).replaced == p.page_id
    store.save_pages([_page(o)])
    pages, copies = _state(store)
    assert pages == [n.page_id], (pages, copies)
    assert copies == {p.page_id: n.page_id, o.page_id: n.page_id}


def test_a_displacer_whose_relatives_could_not_be_checked_is_decided_again_by_the_replay(store):
    """Invariant seed 4617: Redis died while O, which had just displaced P, claimed its sketch to find its
    passage relatives; O stood beside N, one story, and a re-crawl of either found its own entry. O's whole
    decision is spooled instead: it is saved undecided, and the replay finds N and makes O its copy."""
    from storage import open_store

    p, n, o = _triangle()

    class RedisDiesAtTheClaim(RedisDedupIndex):
        def claim_sketch(self, doc, min_shared):
            if doc.page_id == o.page_id:
                raise LookupUnavailable("passage claims: Redis went away")
            return super().claim_sketch(doc, min_shared)

    engine = _engine(store)
    for doc in (p, n):
        assert engine.decide(doc).kind == "new"
        store.save_pages([_page(doc)])
    verdict = DedupEngine(NearDupParams(k=store.config.simhash_k), RedisDiesAtTheClaim(store)).decide(o)
    assert (verdict.kind, verdict.replaced, verdict.spooled) == ("new", p.page_id, True), verdict
    store.save_pages([_page(o)])
    assert store.pages.find_one({"_id": o.page_id})["undecided"] is True
    later = open_store(store.config)   # the next crawl: its open replays the spool this crawl left
    try:
        pages, copies = _state(later)
    finally:
        later.close()
    assert pages == [n.page_id], (pages, copies)
    assert copies == {p.page_id: n.page_id, o.page_id: n.page_id}


def test_a_page_found_a_copy_by_one_crawler_as_another_made_it_stand_keeps_its_entries(store):
    """Invariant seed 1592, the other half. Crawler 1 finds P by O's SimHash (its own text of O is one bit
    from P's); before it hands P over to O, crawler 2 (its text of O far from P's SimHash) indexes O and
    claims its sketch; crawler 2 then finds O a passage copy of P, takes O's entries and claim back, and
    sees O standing for P (crawler 1's hand-over). O stands: crawler 2 must give O its entries and claim
    back, else N, checked next, found nothing and both stood."""
    p, n, o = _triangle()
    p = dataclasses.replace(p, text=o.text + OTHER, sketch=o.sketch)   # P copies O's passages
    o_first = dataclasses.replace(o, simhash=p.simhash ^ 1)
    o_second = dataclasses.replace(_doc(o.page_id, o.text + "（完）", 15), simhash=p.simhash ^ 0xFFFF0000)
    hand_over: list = []

    class CrawlerOne(RedisDedupIndex):
        def replace_original(self, old_id, doc, verdict):
            hand_over.append(lambda: super(CrawlerOne, self).replace_original(old_id, doc, verdict))
            assert second.decide(o_second).kind == "unchanged"
            return hand_over[1]

    class CrawlerTwo(RedisDedupIndex):
        def text_of(self, page_id):
            if len(hand_over) == 1:   # crawler 2 verifies P only after crawler 1 handed P over to O
                hand_over.append(hand_over[0]())
            return super().text_of(page_id)

    first = DedupEngine(NearDupParams(k=store.config.simhash_k), CrawlerOne(store))
    second = DedupEngine(NearDupParams(k=store.config.simhash_k), CrawlerTwo(store))
    assert first.decide(p).kind == "new"
    store.save_pages([_page(p)])
    assert first.decide(o_first).replaced == p.page_id
    store.save_pages([_page(o_first)])
    assert _engine(store).decide(n).replaced == o.page_id
    store.save_pages([_page(n)])
    pages, copies = _state(store)
    assert pages == [n.page_id], (pages, copies)
    assert copies == {p.page_id: n.page_id, o.page_id: n.page_id}


def test_a_page_saved_undecided_is_not_taken_for_decided_by_its_own_entry(store):
    """Invariant seed 1715 (cluster, Redis wiped): crawler 1's check of X failed half-way (one cluster slot
    written) and X was saved undecided, its check spooled. Crawler 2 found X's own entry and called X
    "unchanged", a re-crawl of a decided page: its save took the undecided mark away, the spool replay then
    left X alone as decided by another crawler, and X stood beside its exact copy. X's decision stays spooled."""
    x = _doc("x" * 32, STORY, 15)
    store.save_pages([{**_page(x), "undecided": True}])
    store.index.check(x.page_id, x.content_hash, x.simhash, store.config.simhash_k, True)   # the half-written check
    verdict = _engine(store).decide(x)
    assert verdict.spooled and verdict.kind == "new", verdict
    store.save_pages([{**_page(x), "undecided": True}])
    assert store.pages.find_one({"_id": x.page_id})["undecided"] is True


@pytest.mark.parametrize("lands", ["before-the-replay", "never"])
def test_a_join_a_save_could_not_make_waits_in_the_spool_for_the_replay(store, store_config, monkeypatch, lands):
    """A copy record's save finds its URL kept as W by this crawler while E, the page that stands (published
    earlier), is crawler B's, its save not landed: the join cannot be made, and a save has no decision to defer.
    It used to leave W and E both standing until the next store open's repair; it now waits in the spool, which
    the crawl replays at its close. E landed by then: one page stands. E never lands (B died, its claim expired):
    the entry goes, W stands alone."""
    from storage import open_store
    from storage.dedup_index import date_key, text_key

    e, w = _claimed_by_a_crawler_that_died(store, store_config, monkeypatch)
    copy = {"url": w.url, "content_hash": w.content_hash, "original_id": e.page_id, "method": "exact"}
    assert store.join_stored_copies([copy]) == 1
    assert _state(store) == ([w.page_id], {}) and store.spool.count() == 1
    store.spool.rotate()
    assert store.replay_spool()["failed"] == 1                # E still claimed, not landed: kept for later
    assert store.spool.count() == 1 and _state(store) == ([w.page_id], {})
    if lands == "never":
        store.redis.delete(text_key(store, e.page_id), date_key(store, e.page_id))   # the claim expired
    else:
        late = open_store(store_config)                     # B's save lands at last
        try:
            late.save_pages([_page(e)])
        finally:
            late.close()
    store.spool.rotate()
    stats = store.replay_spool()
    assert stats["failed"] == 0 and store.spool.count() == 0
    pages, copies = _state(store)
    if lands == "never":
        assert pages == [w.page_id] and copies == {}, (pages, copies)
    else:
        assert pages == [e.page_id] and copies == {w.page_id: e.page_id}, (pages, copies)
