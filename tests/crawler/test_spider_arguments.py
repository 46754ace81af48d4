"""A newcomer's `scrapy crawl` mistakes end with one line and exit 2; a crawl that fetched nothing exits 1."""
from __future__ import annotations

import logging

import pytest
from scrapy.utils.test import get_crawler

from crawler.__main__ import scrapy_crawl
from crawler.commands.crawl import crawl_failure, quiet_below
from crawler.progress import CrawlProgress, auto_interval, progress_counts
from crawler.siteprofiles import ProfileError
from crawler.spiders.base import SpiderArgumentError
from crawler.spiders.fiction import FictionSpider
from crawler.spiders.news import NewsSpider

BAD_ARGUMENTS = [
    ("news", {}, "say what to crawl: -a start_urls=URL"),
    ("news", {"profile": "nosuch"}, "unknown profile 'nosuch'; known: cctv, chinanews"),
    ("news", {"start_urls": "notaurl"}, "-a start_urls: not an http(s) URL: 'notaurl'"),
    ("news", {"bogus": "1"}, "unknown argument -a bogus= for spider 'news'; it accepts -a start_urls="),
    ("news", {"toc": ""}, "unknown argument -a toc= for spider 'news'"),
    ("news", {"start_urls": ""}, "-a start_urls= is empty"),
    ("news", {"sitemaps": "maybe"}, "-a sitemaps=maybe: expected 1 or 0"),
    ("news", {"start_urls": "https://a.cn/", "profile": "sina"}, "not both"),
    ("fiction", {}, "say what to crawl: -a toc=URL"),
    ("fiction", {"book": "nosuch"}, "unknown book 'nosuch'; known: hongloumeng-wikisource"),
    ("fiction", {"toc": "ftp://x.cn/"}, "-a toc: not an http(s) URL"),
    ("nosuch", {}, "no such spider; the spiders are fiction, news"),
]


@pytest.mark.parametrize("spider,args,message", BAD_ARGUMENTS)
def test_bad_spider_argument_is_one_line_and_exit_2(spider, args, message):
    proc = scrapy_crawl(spider, args, {}, timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "Task exception" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr
    assert proc.stderr.startswith(f"scrapy crawl {spider}: ") and message in proc.stderr, proc.stderr


def test_the_same_checks_hold_when_the_spider_is_built_directly():
    with pytest.raises(SpiderArgumentError, match="unknown argument -a bogus="):
        NewsSpider(start_urls="https://a.cn/", bogus="1")
    with pytest.raises(ProfileError, match="unknown profile"):
        NewsSpider(profile="nosuch")
    with pytest.raises(SpiderArgumentError, match="say what to crawl"):
        FictionSpider()


def test_profile_all_keeps_every_bundled_site():
    assert [t.name for t in NewsSpider(profile="all").targets] == ["chinanews", "people", "sina", "cctv", "thepaper"]
    assert NewsSpider(start_urls="https://a.cn/", sitemaps="no").use_sitemaps is False


def test_crawl_where_every_request_failed_exits_1(servers, tmp_path):
    """Offline (connection refused everywhere): the crawl says so and exits 1 instead of 0."""
    config = servers.config(var_dir=str(tmp_path / "var"))
    env = {"MONGO_URI": config.mongo_uri, "REDIS_URL": config.redis_url, "ZHDEDUP_DB": config.db_name,
           "ZHDEDUP_PREFIX": config.key_prefix, "ZHDEDUP_VAR": str(config.var_dir)}
    proc = scrapy_crawl("news", {"start_urls": "http://127.0.0.1:9/,http://127.0.0.1:9/b"},
                        {"RETRY_ENABLED": "0", "ZHDEDUP_INFRINGEMENT": "0"}, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "crawl failed: nothing could be fetched: every request failed (connection x2)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_crawl_failure_rules():
    assert crawl_failure({"finish_reason": "finished", "zhdedup/failed/dns": 3}).endswith("(dns x3)")
    assert crawl_failure({"finish_reason": "finished", "zhdedup/fetched": 1, "zhdedup/failed/dns": 3}) is None
    assert crawl_failure({"finish_reason": "finished"}) is None          # a distributed worker with no share
    assert crawl_failure({"finish_reason": "shutdown", "zhdedup/failed/dns": 3}) is None   # Ctrl-C
    assert "store" in crawl_failure({"finish_reason": "storage_unavailable", "zhdedup/fetched": 5})


@pytest.mark.parametrize("level, made", [("INFO", False), ("WARNING", False), ("DEBUG", True), (logging.INFO, False)])
def test_mongodb_debug_records_are_made_only_when_the_crawl_logs_debug(level, made):
    logger, root = logging.getLogger("pymongo"), logging.getLogger()
    before = logger.level, root.level
    try:
        logger.setLevel(logging.NOTSET)
        root.setLevel(logging.DEBUG)   # as under Scrapy: its handler, not the logger, filters by LOG_LEVEL
        quiet_below(level)
        assert logger.isEnabledFor(logging.DEBUG) is made
        assert logging.getLogger("pymongo.command").isEnabledFor(logging.DEBUG) is made
    finally:
        logger.setLevel(before[0])
        root.setLevel(before[1])


def test_progress_line_counts_from_the_stats():
    stats = {"zhdedup/fetched": 10, "zhdedup/stored": 6, "zhdedup/dropped/exact": 2, "zhdedup/dropped/near": 1,
             "zhdedup/matched": 1, "zhdedup/failed/http_404": 1, "zhdedup/failed/no_article_body": 2}
    assert progress_counts(stats) == {"fetched": 10, "stored": 6, "duplicates": 3, "matches": 1, "failed": 3}
    crawler = get_crawler(NewsSpider, {"ZHDEDUP_PROGRESS_INTERVAL": 7})
    crawler.stats.open_spider()
    for key, value in stats.items():
        crawler.stats.set_value(key, value)
    ext = CrawlProgress.from_crawler(crawler)
    assert ext.interval == 7
    ext.queue_sizes = lambda: (4, 2)   # no engine outside a crawl
    line = ext.line()
    assert line.startswith("progress: fetched 10 (") and "stored 6, duplicates 3, matches 1, failed 3" in line
    assert line.endswith("queued 4, in flight 2")
    assert auto_interval(0, True) == 5 and auto_interval(0, False) == 30 and auto_interval(2, True) == 2


@pytest.mark.parametrize("k", ["9", "-1", "three"])
def test_a_simhash_k_the_index_cannot_serve_is_refused_before_anything_starts(tmp_path, k):
    """k is served exactly (0..8) or the crawl stops at start: never a silently approximate dedup."""
    var = tmp_path / "var"
    proc = scrapy_crawl("news", {"start_urls": "http://127.0.0.1:9/"}, {"ZHDEDUP_SIMHASH_K": k},
                        env={"ZHDEDUP_VAR": str(var)}, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    critical = [line for line in proc.stderr.splitlines() if "CRITICAL" in line]
    assert len(critical) == 1 and "bad dedup setting" in critical[0], proc.stderr[-2000:]
    assert not var.exists(), "no server was started and nothing fetched"


@pytest.mark.parametrize("setting", ["ZHDEDUP_EXTRACT_WORKERS", "ZHDEDUP_FINGERPRINT_WORKERS"])
def test_a_bad_worker_count_is_refused_before_anything_starts(tmp_path, setting):
    var = tmp_path / "var"
    proc = scrapy_crawl("news", {"start_urls": "http://127.0.0.1:9/"}, {setting: "many"},
                        env={"ZHDEDUP_VAR": str(var)}, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    critical = [line for line in proc.stderr.splitlines() if "CRITICAL" in line]
    assert len(critical) == 1 and f"{setting}='many'" in critical[0], proc.stderr[-2000:]
    assert not var.exists(), "no server was started and nothing fetched"
