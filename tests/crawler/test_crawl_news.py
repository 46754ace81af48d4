"""End-to-end: `scrapy crawl news` over fixture sites X (profile) and Y (start URL), real servers."""
from __future__ import annotations

import re

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
    assert x_result.failed == {"redirect_loop": 1, "http_404": 1}
    skipped = {k: v for k, v in x_result.skipped.items() if k in ("soft_404", "binary", "robots_txt")}
    assert skipped == {"soft_404": 1, "binary": 1, "robots_txt": 1}, x_result.skipped
    assert x_result.skipped["list_page"] >= 2  # index pages and the navigation-only page
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


def test_robots_txt_is_downloaded_once_a_site(crawled, sites):
    """Scrapy's RobotsTxtMiddleware fetches robots.txt; the spider's own request for it (the Sitemap: lines,
    which still lead to X's sitemap above) is answered from that fetch, not downloaded again."""
    assert sites.hits("x")["/robots.txt"] == 1 and sites.hits("y")["/robots.txt"] == 1


def test_runs_are_recorded_with_counts(crawled):
    """Each crawl leaves a run record with its finish reason and counts."""
    store, _, _ = crawled
    runs = store.runs.recent()
    assert [r["spider"] for r in runs] == ["news", "news"]
    assert all(r["counts"]["finish_reason"] == "finished" for r in runs)
    assert sorted(r["counts"]["stored"] for r in runs) == [1, 5]


def test_every_fetched_url_has_one_recorded_outcome(crawled, sites):
    """fetched = stored + unchanged + duplicate + skipped + failed, per run, in MongoDB and in the stats."""
    store, x_result, y_result = crawled
    for result, run in zip((x_result, y_result), reversed(store.runs.recent())):  # X ran first
        records = list(store.runs.find_outcomes(run["id"]))
        fetched = [r for r in records if r.get("fetched")]
        assert len(fetched) == result.counts["fetched"] + result.counts.get("fetch_failed", 0) > 0
        assert len({r["url"] for r in fetched}) == len(fetched), "one outcome per fetched URL"
        by_outcome = {}
        for r in records:
            by_outcome[r["outcome"]] = by_outcome.get(r["outcome"], 0) + 1
            assert r["outcome"] == "stored" or r["reason"], r
        assert {k: result.counts.get(f"outcome/{k}", 0) for k in by_outcome} == by_outcome
        assert by_outcome.get("stored", 0) == result.counts["stored"]
        assert store.runs.outcome_counts(run["id"])["skipped"]["list_page"] >= 1
    x = sites.base("x")
    why = {r["url"]: (r["outcome"], r["reason"]) for r in store.runs.find_outcomes(outcome="failed")}
    assert why[x + x_paths()["missing"]] == ("failed", "http_404")
    [dup] = store.runs.find_outcomes(url=sites.base("y") + y_paths()["exact"])
    assert (dup["outcome"], dup["reason"], dup["original_url"]) == ("duplicate", "exact", x + x_paths()["utf8"])


def test_summary_is_logged(crawled):
    """The readable summary appears in the crawl log."""
    _, x_result, _ = crawled
    assert "zhdedup summary for spider 'news'" in x_result.log
    assert "redirect_loop" in x_result.log


def test_the_crawl_froze_its_start_for_the_collector(crawled):
    """The crawl process's collector as crawler/collector.py tunes it, read from the stats the crawl dumps."""
    _, x_result, _ = crawled
    frozen = re.search(r"'gc/frozen_objects': (\d+)", x_result.log)
    assert frozen and int(frozen.group(1)) > 50_000, x_result.log[-3000:]   # ~110,000: scrapy, twisted, pymongo...
    assert "'gc/young_threshold': 20000" in x_result.log


def test_near_copy_really_differs():
    """Guard for the fixture itself: the near copy is not an exact copy."""
    text = "\n".join(S["1002"]["paragraphs"])
    changed = text
    for old, new in CHANGES_1002:
        changed = changed.replace(old, new)
    assert changed != text


def test_storage_lists_outcomes_pages_and_clusters(crawled, sites):
    """`python -m storage outcomes | pages | duplicates`: why a URL is (not) stored, as a user asks it."""
    import json
    import subprocess
    import sys

    store, _, _ = crawled
    env = {**__import__("os").environ, "MONGO_URI": store.config.mongo_uri, "REDIS_URL": store.config.redis_url,
           "ZHDEDUP_DB": store.config.db_name, "ZHDEDUP_PREFIX": store.config.key_prefix,
           "ZHDEDUP_VAR": str(store.config.var_dir)}

    def cli(*args: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-m", "storage", *args], env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    x, y = sites.base("x"), sites.base("y")
    first_run = store.runs.recent()[-1]["id"]
    rows = [json.loads(line) for line in cli("outcomes", "--run", first_run, "--json")]
    assert rows and all({"url", "outcome", "reason", "run"} <= set(r) for r in rows)
    assert {r["run"] for r in rows} == {first_run}
    skipped = cli("outcomes", "--run", first_run, "--outcome", "skipped", "--reason", "soft_404")
    assert skipped[0].split("\t")[:3] == ["outcome", "reason", "url"]
    assert [line.split("\t")[2] for line in skipped[1:]] == [x + x_paths()["soft404"]]
    pages = cli("pages", "--site", "x-daily")
    assert len(pages) == 1 + 5 and pages[0].startswith("fetched\tsite\turl")
    cluster = json.loads(cli("duplicates", "--of", y + y_paths()["exact"], "--json")[0])
    assert cluster["original"]["url"] == x + x_paths()["utf8"]
    assert {c["url"] for c in cluster["copies"]} >= {y + y_paths()["exact"]}


def test_a_recrawl_counts_unchanged_pages_and_keeps_known_copies_quiet(crawled, sites, tmp_path):
    """Crawling Y again: its original is unchanged (not stored again), its copies are dropped without INFO lines."""
    store, _, y_first = crawled
    from tests.crawler.conftest import Crawler

    again = Crawler(store.config, tmp_path)("news", start_urls=sites.base("y") + "/")
    assert again.counts.get("stored", 0) == 0 and again.counts["unchanged"] == y_first.counts["stored"] == 1
    assert again.counts["dropped/exact"] == 2
    copy = sites.base("y") + y_paths()["exact"]
    assert f"Dropped {copy}" in y_first.log and f"Dropped {copy}" not in again.log
    assert "unchanged (re-crawl) 1" in again.log
    runs = store.runs.recent()
    assert runs[0]["counts"]["outcome/unchanged"] == 1
