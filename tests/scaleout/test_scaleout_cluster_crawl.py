"""End-to-end on a 3-master Redis Cluster: `scrapy crawl news` over the fixture sites X and Y stores the
same pages and names the same originals as on one Redis (tests/crawler/test_crawl_news.py)."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from crawler.demo_site.server import SiteServer
from tests.crawler.conftest import Crawler, duplicates, stored_urls
from tests.crawler.sites import SITES, x_paths, y_paths

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def cluster_crawl(servers, redis_cluster, tmp_path_factory) -> Iterator[tuple[Any, SiteServer]]:
    """X crawled with a profile, then Y from its start URL, on a store whose Redis is the cluster."""
    from storage import open_store

    tmp = tmp_path_factory.mktemp("cluster-crawl")
    config = servers.config(var_dir=str(tmp / "var"), redis_url=redis_cluster.url)
    store = open_store(config)
    sites = SiteServer(SITES).start()
    try:
        assert store.index.cluster, "the store must have picked the cluster client"
        crawl = Crawler(config, tmp)
        profile = tmp / "x.toml"
        profile.write_text(
            '[[site]]\nname = "x-daily"\n'
            f'start_urls = ["{sites.base("x")}/"]\n'
            "article_links = ['/news/\\d{4}/\\d{4}/[\\w-]+\\.html$']\n"
            "list_links = ['/list/\\d+\\.html$']\n", encoding="utf-8")
        crawl("news", profiles_file=str(profile))
        crawl("news", start_urls=sites.base("y") + "/")
        yield store, sites
    finally:
        sites.stop()
        try:
            store.drop_all()
        finally:
            store.close()


def test_cluster_crawl_stores_the_distinct_articles_and_names_originals(cluster_crawl):
    store, sites = cluster_crawl
    x, y = sites.base("x"), sites.base("y")
    p, q = x_paths(), y_paths()
    assert stored_urls(store) == {x + p[k] for k in ("utf8", "gbk", "big5", "sitemap", "huge")} | {y + q["feed"]}
    assert duplicates(store) == {
        y + q["exact"]: (x + p["utf8"], "exact"),
        y + q["near"]: (x + p["gbk"], "near"),
        y + q["simplified"]: (x + p["big5"], "exact"),
    }
    assert store.index.count() == len(stored_urls(store))
