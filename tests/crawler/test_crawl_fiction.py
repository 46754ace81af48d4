"""End-to-end: `scrapy crawl fiction` over the novel (Z) and its pirate copy (P), real servers."""
from __future__ import annotations

import pytest

from crawler.demo_site.content import BOOK
from tests.crawler.conftest import duplicates, stored_urls
from tests.crawler.sites import PIRATE_JUNK

pytestmark = pytest.mark.timeout(180)
SOURCE_ID = "test-dengta-02"


def chapter_url(base: str, root: str, n: int, part: int = 1) -> str:
    """URL of chapter n (part) as the fixture sites lay them out."""
    return f"{base}{root}{100 + n}" + (f"_{part}" if part > 1 else "") + ".html"


@pytest.fixture(scope="module")
def crawled(module_store, sites):
    """Crawl the novel, register chapter 2 as a source, then crawl the pirate copy."""
    store, crawl = module_store
    z = crawl("fiction", toc=sites.base("z") + "/book/1/")
    from storage.sources import SourceLibrary

    text = "\n".join(BOOK["chapters"][1][1])
    SourceLibrary(store).register(SOURCE_ID, "灯塔守夜人 第二章", text, author="沈青禾")
    p = crawl("fiction", toc=sites.base("p") + "/read/9/")
    return store, z, p


def test_chapters_stored_in_toc_order_with_book_fields(crawled, sites):
    """Three chapters, numbered by the full list (not the "latest chapters" box), with titles."""
    store, z, _ = crawled
    base = sites.base("z")
    pages = sorted((store.page_by_url(chapter_url(base, "/book/1/", n)) for n in (1, 2, 3)),
                   key=lambda p: p["chapter_number"])
    assert [(p["chapter_number"], p["chapter_title"], p["book"]) for p in pages] == [
        (n, BOOK["chapters"][n - 1][0], BOOK["title"]) for n in (1, 2, 3)]
    assert z.counts["stored"] == 3 and z.counts["books"] == 1


def test_next_page_parts_are_joined(crawled, sites):
    """Chapter 3 came in three parts: one item whose text holds the first and last paragraphs."""
    store, z, _ = crawled
    base = sites.base("z")
    page = store.page_by_url(chapter_url(base, "/book/1/", 3))
    assert page["parts"] == [chapter_url(base, "/book/1/", 3, k) for k in (1, 2, 3)]
    first, last = BOOK["chapters"][2][1][0], BOOK["chapters"][2][1][-1]
    assert first in page["text"] and last in page["text"]
    assert page["text"].index(first) < page["text"].index(last)
    assert z.counts["joined_parts"] == 3  # 1 extra part for chapter 2, 2 for chapter 3
    assert not any(u.endswith(("_2.html", "_3.html")) for u in stored_urls(store))


def test_pirate_copies_are_dropped_and_still_reported(crawled, sites):
    """P's GBK two-part chapter 1 and verbatim chapter 3 are exact duplicates of Z's; its chapter 2,
    padded with junk lines, is a copy by shared passages: dropped too, yet matched to the registered
    source (the match keeps the page's text, since the page itself is not stored)."""
    store, _, p = crawled
    z_base, p_base = sites.base("z"), sites.base("p")
    assert duplicates(store) == {
        chapter_url(p_base, "/read/9/", 1): (chapter_url(z_base, "/book/1/", 1), "exact"),
        chapter_url(p_base, "/read/9/", 2): (chapter_url(z_base, "/book/1/", 2), "passages"),
        chapter_url(p_base, "/read/9/", 3): (chapter_url(z_base, "/book/1/", 3), "exact"),
    }
    assert stored_urls(store) == {chapter_url(z_base, "/book/1/", n) for n in (1, 2, 3)}
    matches = list(store.db.matches.find({}))
    assert [(m["suspect_url"], m["source_id"]) for m in matches] == [(chapter_url(p_base, "/read/9/", 2), SOURCE_ID)]
    assert matches[0]["score"] > 0.5 and matches[0]["suspect_spans"]
    s, e = matches[0]["suspect_spans"][0]
    assert BOOK["chapters"][1][1][0][:10] in matches[0]["suspect_text"][s:e]
    assert p.counts["matched"] == 1 and p.counts["dropped/exact"] == 2 and p.counts["dropped/passages"] == 1


def test_junk_lines_do_not_fool_the_match(crawled, sites):
    """The matched pirate chapter really carries the junk (so the match is not trivial)."""
    store, _, _ = crawled
    match = store.db.matches.find_one({"suspect_url": chapter_url(sites.base("p"), "/read/9/", 2)})
    assert any(word in match["suspect_text"] for word in ("pirate.example", "m.pirate")), PIRATE_JUNK


def test_jobdir_resume_does_not_fetch_or_store_again(crawled, sites, tmp_path):
    """With JOBDIR, running the same crawl again fetches no finished chapter and stores nothing twice."""
    store, _, _ = crawled
    from tests.crawler.conftest import Crawler

    runner = Crawler(store.config, tmp_path)
    jobdir = {"JOBDIR": str(tmp_path / "job")}
    before = {n: sites.hits("z").get(f"/book/1/{100 + n}.html", 0) for n in (1, 2, 3)}
    first = runner("fiction", settings=jobdir, toc=sites.base("z") + "/book/1/")
    second = runner("fiction", settings=jobdir, toc=sites.base("z") + "/book/1/")
    after = {n: sites.hits("z").get(f"/book/1/{100 + n}.html", 0) for n in (1, 2, 3)}
    assert {n: after[n] - before[n] for n in after} == {1: 1, 2: 1, 3: 1}
    assert first.counts["items"] == 3 and second.counts.get("items", 0) == 0
    base = sites.base("z")
    assert store.pages.count_documents({"url": {"$regex": f"^{base}/book/1/"}}) == 3


def test_chapter_parts_toc_and_chapters_each_have_an_outcome(crawled, sites):
    """The table of contents and the parts joined into a chapter are recorded as skipped, with why."""
    store, z, _ = crawled
    run = store.runs.recent()[-1]     # the first crawl: the novel
    records = {r["url"]: r for r in store.runs.find_outcomes(run["id"])}
    base = sites.base("z")
    assert records[base + "/book/1/"]["reason"] == "toc"
    assert records[chapter_url(base, "/book/1/", 1)]["outcome"] == "stored"
    parts = [r for r in records.values() if r["reason"] == "chapter_part"]
    assert parts and all("joined into" in r["detail"] for r in parts)
    assert sum(1 for r in records.values() if r.get("fetched")) == z.counts["fetched"] + z.counts.get("fetch_failed", 0)
