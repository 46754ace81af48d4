"""End-to-end: `scrapy crawl news` over fixture sites X (profile) and Y (start URL), real servers."""
from __future__ import annotations

import pytest

from tests.crawler.conftest import duplicates, stored_urls
from tests.crawler.sites import CHANGES_1002, TRAD, S, x_paths, y_paths

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def crawled(module_store, sites, tmp_path_factory):
    """Crawl X with a profile file, then Y from its start URL, on one store."""
    store, crawl = module_store
    profile = tmp_path_factory.mktemp("profiles") / "x.toml"
    profile.write_text(
        '[[site]]\nname = "x-daily"\n'
        f'start_urls = ["{sites.base("x")}/"]\n'
        "article_links = ['/news/\\d{4}/\\d{4}/[\\w-]+\\.html$']\n"
        "list_links = ['/list/\\d+\\.html$']\n", encoding="utf-8")
    x = crawl("news", profiles_file=str(profile))
    y = crawl("news", start_urls=sites.base("y") + "/")
    return store, x, y


def test_stored_pages_are_exactly_the_distinct_articles(crawled, sites):
    """X's four readable articles plus the 10 MB one, and Y's feed-only original; nothing else."""
    store, _, _ = crawled
    x, y = sites.base("x"), sites.base("y")
    p, q = x_paths(), y_paths()
    expected = {x + p[k] for k in ("utf8", "gbk", "big5", "sitemap", "huge")} | {y + q["feed"]}
    assert stored_urls(store) == expected


def test_duplicates_name_their_originals(crawled, sites):
    """Y's exact copy, near copy (3 words changed) and simplified copy of the Big5 story."""
    store, _, y_result = crawled
    x, y = sites.base("x"), sites.base("y")
    p, q = x_paths(), y_paths()
    assert duplicates(store) == {
        y + q["exact"]: (x + p["utf8"], "exact"),
        y + q["near"]: (x + p["gbk"], "near"),
        y + q["simplified"]: (x + p["big5"], "exact"),
    }
    reasons = {d["url"]: d["reason"] for d in y_result.report["dropped"]}
    assert reasons[y + q["exact"]] == f"exact duplicate of {x + p['utf8']}"
    assert reasons[y + q["near"]].startswith(f"near duplicate of {x + p['gbk']} (distance ")
    assert y_result.counts["dropped/exact"] == 2 and y_result.counts["dropped/near"] == 1
    assert y_result.counts["stored"] == 1


def test_encodings_come_out_right(crawled, sites):
    """GBK (charset in the header) and Big5 (charset only in <meta>) pages decode to the right text."""
    store, _, _ = crawled
    x, p = sites.base("x"), x_paths()
    gbk = store.page_by_url(x + p["gbk"])
    assert S["1002"]["paragraphs"][0] in gbk["text"]
    big5 = store.page_by_url(x + p["big5"])
    assert TRAD.convert(S["1003"]["paragraphs"][1]) in big5["text"]
    assert gbk["site"] == "x-daily" and gbk["spider"] == "news"
    assert gbk["simhash"] >= 0 and len(gbk["content_hash"]) == 32 and gbk["dna"]


def test_bad_pages_fail_with_reasons(crawled):
    """Navigation-only (a list page), soft 404, redirect loop, binary, real 404 and robots.txt: each counted once."""
    _, x_result, _ = crawled
    assert x_result.failed == {"list_page": 1, "soft_404": 1, "redirect_loop": 1, "binary": 1,
                               "http_404": 1, "robots_txt": 1}
    assert x_result.counts["stored"] == 5
    assert x_result.counts.get("dropped/exact", 0) == 0 and x_result.counts.get("dropped/near", 0) == 0


def test_huge_page_is_stored_with_its_article(crawled, sites):
    """The 10 MB page is downloaded (under DOWNLOAD_MAXSIZE) and its article text kept."""
    store, _, _ = crawled
    page = store.page_by_url(sites.base("x") + x_paths()["huge"])
    assert S["2001"]["paragraphs"][1] in page["text"]
    assert "广告位招租" not in page["text"]


def test_tracking_links_fetch_a_page_once(crawled, sites):
    """Four links to one article (utm_source, spm, #fragment, plain) make one request."""
    assert sites.hits("x")[x_paths()["utf8"]] == 1
    assert sites.hits("y")[y_paths()["feed"]] == 1


def test_sitemap_and_feed_are_used(crawled, sites):
    """The sitemap-only article (X) and the feed-only article (Y) were found."""
    _, x_result, y_result = crawled
    assert x_result.counts["sitemaps"] == 1 and y_result.counts["feeds"] == 1
    assert sites.hits("x")[x_paths()["sitemap"]] == 1


def test_runs_are_recorded_with_counts(crawled):
    """Each crawl leaves a run record with its finish reason and counts."""
    store, _, _ = crawled
    runs = store.list_runs()
    assert [r["spider"] for r in runs] == ["news", "news"]
    assert all(r["counts"]["finish_reason"] == "finished" for r in runs)
    assert sorted(r["counts"]["stored"] for r in runs) == [1, 5]


def test_summary_is_logged(crawled):
    """The readable summary appears in the crawl log."""
    _, x_result, _ = crawled
    assert "zhdedup summary for spider 'news'" in x_result.log
    assert "redirect_loop" in x_result.log


def test_near_copy_really_differs():
    """Guard for the fixture itself: the near copy is not an exact copy."""
    text = "\n".join(S["1002"]["paragraphs"])
    changed = text
    for old, new in CHANGES_1002:
        changed = changed.replace(old, new)
    assert changed != text
