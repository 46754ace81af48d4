"""The crawl benchmark's sites look like users' sites when asked: reprints on other sites, dates before and
after their originals or none, the newest story listed first; and what it counts is read from the servers."""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

from benchmarks.bench_crawl import build_sites, compile_trees, make_articles

POOL = [f"第{i}句话讲的是一件不同的事情。" for i in range(200)]


def test_dated_reprints_live_on_other_sites_with_earlier_later_and_missing_dates():
    pages = make_articles(400, POOL, copy_every=4, sites=3, dates=True)
    copies = [a for a in pages if a.copy_of is not None]
    assert len(copies) == 100
    assert all(a.site != pages[a.copy_of].site for a in copies)
    assert all(a.published for a in pages if a.copy_of is None)
    earlier = sum(1 for a in copies if a.published and a.published < pages[a.copy_of].published)
    later = sum(1 for a in copies if a.published and a.published > pages[a.copy_of].published)
    undated = sum(1 for a in copies if a.published is None)
    assert earlier + later + undated == 100 and min(earlier, later, undated) >= 10 and earlier > later


def test_newest_story_is_listed_first_and_the_date_is_on_the_page():
    pages = make_articles(120, POOL, copy_every=4, sites=2, dates=True)
    sites = build_sites(pages, 2, newest_first=True)
    first_list = sites["site0"]["/list/0.html"].payload().decode("utf-8")
    numbers = [int(n) for n in re.findall(r'href="/a/(\d+)\.html"', first_list)]
    assert numbers == sorted(numbers, reverse=True)
    n = numbers[0]
    page = sites["site0"][f"/a/{n}.html"].payload().decode("utf-8")
    if pages[n].published:
        assert f'content="{pages[n].published}T08:00:00+08:00"' in page


def test_by_default_one_undated_site_with_every_nth_page_a_copy():
    """Without --sites and --dates: one site, no dates, copies where --copy-every puts them."""
    pages = make_articles(60, POOL, copy_every=3)
    assert {a.site for a in pages} == {0} and all(a.published is None for a in pages)
    assert [a.copy_of is not None for a in pages[:6]] == [False, False, True, False, False, True]


def test_the_product_is_byte_compiled_once_and_the_crawls_may_read_it(tmp_path, monkeypatch):
    """The crawls read .pyc files, as a user's runs do: none of them pays the compile of every module again."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    module = tmp_path / "extract" / "rules.py"
    module.parent.mkdir()
    module.write_text("RULE = 1\n", encoding="utf-8")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "draft.py").write_text("x = 1\n", encoding="utf-8")
    compile_trees([str(tmp_path)])
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ
    assert os.path.exists(importlib.util.cache_from_source(str(module)))
    assert not os.path.exists(importlib.util.cache_from_source(str(tmp_path / "notes" / "draft.py")))


def test_mongodb_operations_are_counted_from_the_embedded_server(servers, tmp_path):
    """The crawl benchmark's MongoDB operations per page come from the server's own counters: a find and an
    insert show as one query and one insert; a var/ without a server of ours counts nothing."""
    import pymongo

    from benchmarks.bench_crawl import mongo_ops

    if not servers.embedded:
        pytest.skip("MONGO_URI points at a server that is not ours")
    before = mongo_ops(str(servers.var_dir))
    with pymongo.MongoClient(servers.mongo_uri) as client:
        coll = client[f"t_ops_{tmp_path.name[-8:]}"].pages
        coll.insert_one({"_id": "p1"})
        assert coll.find_one({"_id": "p1"}) is not None
        client.drop_database(coll.database.name)
    after = mongo_ops(str(servers.var_dir))
    assert after["insert"] - before["insert"] >= 1 and after["query"] - before["query"] >= 1, (before, after)
    assert mongo_ops(str(tmp_path / "var")) == {}
