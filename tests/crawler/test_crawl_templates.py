"""End-to-end: a site whose 32 distinct short stories all carry one 800-character related block (real Sina
texts, benchmarks/template_site.py), crawled over loopback HTTP, then a reprint site.

Without site templates most of those stories are dropped as near duplicates of each other (the block
dominates their text); with them every story is stored once and a reprint elsewhere is still dropped.
"""
from __future__ import annotations

import pytest

from benchmarks.template_site import COPIED, COPIED_LONG, N_LONG, N_STORIES, template_sites
from crawler.demo_site.server import SiteServer, html
from tests.crawler.conftest import duplicates, stored_urls

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def template_server():
    """Sites A (stories + block) and B (plain reprints of stories COPIED) on 127.0.0.1."""
    sites = {name: {path: html(page) for path, page in pages.items()} for name, pages in template_sites().items()}
    server = SiteServer(sites).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def crawled(module_store, template_server):
    """Crawl A from its start page, then B, on one store."""
    store, crawl = module_store
    a = crawl("news", start_urls=template_server.base("a") + "/")
    b = crawl("news", start_urls=template_server.base("b") + "/")
    return store, a, b


def test_every_distinct_story_is_stored_once(crawled, template_server):
    """32 short stories and 4 long articles in, 36 pages stored, none recorded as a duplicate of another."""
    store, a, _ = crawled
    base = template_server.base("a")
    pages = {f"{base}/s/{i}.html" for i in range(N_STORIES)} | {f"{base}/l/{i}.html" for i in range(N_LONG)}
    assert pages <= stored_urls(store)
    assert not [u for u in duplicates(store) if u.startswith(base)]
    assert a.counts["stored"] == N_STORIES + N_LONG


def test_no_stored_story_keeps_the_block(crawled, template_server):
    """A site's first pages wait until its template is known: every stored story lost the block, the first too."""
    store, a, _ = crawled
    base = template_server.base("a")
    docs = [store.page_by_url(f"{base}/s/{i}.html") for i in range(N_STORIES)]
    assert all("raw_text" in d for d in docs)
    assert all("raw_text" in store.page_by_url(f"{base}/l/{i}.html") for i in range(N_LONG))
    assert a.counts["template_stripped"] == N_STORIES + N_LONG
    for d in docs:
        assert d["template_lines"] >= 8 and len(d["text"]) <= 300 and len(d["raw_text"]) - len(d["text"]) >= 750


def test_reprints_of_stripped_stories_are_dropped(crawled, template_server):
    """A plain copy on site B of any story of A (the first crawled included) is an exact duplicate of it."""
    store, _, b = crawled
    a_base, b_base = template_server.base("a"), template_server.base("b")
    dups = duplicates(store)
    for i in COPIED:
        assert dups[f"{b_base}/r/{i}.html"] == (f"{a_base}/s/{i}.html", "exact")
    for i in COPIED_LONG:
        assert dups[f"{b_base}/r/l{i}.html"] == (f"{a_base}/l/{i}.html", "exact")
    assert b.counts.get("dropped/exact", 0) == len(COPIED) + len(COPIED_LONG)
