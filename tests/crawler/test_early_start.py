"""The store and the worker processes start in the background as the crawl starts (issue 28: a crawl's
fixed cost): the store opened early is the one every pipeline gets, closed with the spider as before; one
nobody takes is closed when the engine stops; a bad setting starts nothing. Real servers (the session's)."""
from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import InvalidOperation
from scrapy import Spider, signals
from scrapy.utils.test import get_crawler

from crawler.early_start import EarlyStart, enabled_pipelines
from crawler.settings import ITEM_PIPELINES
from pipelines.crawl_store import open_early, store_for


@pytest.fixture
def store_env(servers, tmp_path, monkeypatch) -> Any:
    """The session servers and a fresh database, as a crawl reads them from the environment."""
    config = servers.config(var_dir=str(tmp_path / "var"))
    for name, value in {"MONGO_URI": config.mongo_uri, "REDIS_URL": config.redis_url, "ZHDEDUP_DB": config.db_name,
                        "ZHDEDUP_PREFIX": config.key_prefix, "ZHDEDUP_VAR": config.var_dir}.items():
        monkeypatch.setenv(name, value)
    return config


def is_closed(store: Any) -> bool:
    """Whether the store's MongoDB client was closed (pymongo refuses any use after close)."""
    try:
        store.mongo.admin.command("ping")
    except InvalidOperation:
        return True
    return False


def test_the_store_opened_early_is_the_one_the_pipelines_get_and_it_closes_with_the_spider(store_env):
    crawler = get_crawler(Spider, settings_dict={"ITEM_PIPELINES": ITEM_PIPELINES})
    EarlyStart.from_crawler(crawler)
    opening = crawler._zhdedup_store_opening
    store = store_for(crawler)
    assert store is opening.future.result() and store_for(crawler) is store
    assert not hasattr(crawler, "_zhdedup_store_opening")
    spider = Spider("early")
    crawler.signals.send_catch_log(signals.spider_opened, spider=spider)
    crawler.signals.send_catch_log(signals.spider_closed, spider=spider, reason="finished")
    assert is_closed(store)
    store_for(crawler).drop_all()   # a store opened again on demand, as before: the test's database goes
    crawler.signals.send_catch_log(signals.spider_closed, spider=spider, reason="finished")


def test_a_store_opened_early_that_nobody_takes_is_closed_when_the_engine_stops(store_env):
    crawler = get_crawler(Spider, settings_dict={"ITEM_PIPELINES": ITEM_PIPELINES})
    open_early(crawler)
    future = crawler._zhdedup_store_opening.future
    store = future.result(timeout=60)
    assert not is_closed(store)
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert is_closed(store)


@pytest.mark.parametrize("setting", ["ZHDEDUP_EXTRACT_WORKERS", "ZHDEDUP_SIMHASH_K"])
def test_a_bad_setting_starts_nothing_early(store_env, setting):
    crawler = get_crawler(Spider, settings_dict={"ITEM_PIPELINES": ITEM_PIPELINES, setting: "many"})
    EarlyStart.from_crawler(crawler)
    assert not hasattr(crawler, "_zhdedup_store_opening") and not hasattr(crawler, "_zhdedup_workers")


def test_only_a_crawl_whose_pipelines_use_the_store_opens_it_early(store_env):
    extract_only = {"pipelines.extract.ExtractPipeline": 100}
    crawler = get_crawler(Spider, settings_dict={"ITEM_PIPELINES": extract_only, "ZHDEDUP_EXTRACT_WORKERS": "0"})
    assert enabled_pipelines(crawler.settings) == {"pipelines.extract.ExtractPipeline"}
    EarlyStart.from_crawler(crawler)
    assert not hasattr(crawler, "_zhdedup_store_opening")


def test_the_worker_processes_module_imports_neither_scrapy_nor_itemadapter():
    import subprocess
    import sys

    code = ("import sys, pipelines._worker_tasks, pipelines.worker_process; "
            "print(sorted(m for m in ('scrapy', 'itemadapter', 'twisted') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_worker_processes_end_with_the_crawl_however_it_ended():
    """A crawl that cannot start (its JOBDIR in use) sends no spider_closed: the crawl command stops the worker
    processes the early start began, waiting for them (one still starting when its parent exited printed a
    traceback, test_reliability_resume.py), and a start still on its way afterwards starts nothing."""
    import os

    from pipelines._worker_tasks import warm_up_fingerprint
    from pipelines._workers import pool_for
    from pipelines.early import stop_workers

    crawler = get_crawler(Spider, {"ZHDEDUP_FINGERPRINT_WORKERS": 1})
    pool = pool_for(crawler)
    pool.start(warm_up_fingerprint)
    pids = pool.pids()
    assert pids
    stop_workers(crawler)
    assert not pool.started
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    pool.start(warm_up_fingerprint)   # the early-start thread, late
    assert not pool.started


def modules_after(code: str, watched: tuple[str, ...]) -> list[str]:
    """Which of `watched` a fresh interpreter has imported after running code (this project on its path)."""
    import subprocess
    import sys

    probe = f"{code}\nimport sys\nprint(sorted(m for m in {watched!r} if m in sys.modules))"
    return eval(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)


def test_scrapy_listing_the_crawls_extensions_imports_neither_aiohttp_nor_the_store():
    """Scrapy imports every module EXTENSIONS names (one set to None too) before it builds the first, EarlyStart:
    aiohttp (its remote control, off) and the whole store (pymongo, redis, the fingerprint tables) were imported
    there, ~0.4 s before the embedded servers and the worker processes could start."""
    code = ("from scrapy.settings import Settings\nfrom crawler import settings\n"
            "s = Settings()\ns.setmodule(settings)\ns.get_component_priority_dict_with_base('EXTENSIONS')")
    assert modules_after(code, ("aiohttp", "pymongo", "storage.store", "numpy")) == []


def test_the_embedded_servers_start_from_modules_that_import_no_driver():
    """The store-open thread starts the servers first (storage.servers) and imports the store meanwhile."""
    assert modules_after("from storage import StoreConfig, servers", ("pymongo", "redis", "storage.store")) == []


def test_a_crawl_that_is_not_distributed_loads_its_addons_without_scrapy_redis():
    """Every crawl loads DistributedAddon (and OutcomeRecorder asks whether the scheduler is the shared one)
    before or beside its early start: neither imports scrapy-redis or redis when distributed mode is off."""
    code = ("from scrapy.settings import Settings\nfrom scrapy.utils.misc import load_object\n"
            "from crawler import settings\nfrom crawler.outcomes import _distributed\n"
            "s = Settings()\ns.setmodule(settings)\n[load_object(path) for path in s.getdict('ADDONS')]\n"
            "assert _distributed(s) is False")
    assert modules_after(code, ("scrapy_redis", "redis")) == []
    on = "\ns.set('SCHEDULER', 'crawler.distributed.DistributedScheduler')\nassert _distributed(s) is True"
    assert modules_after(code + on, ("scrapy_redis",)) == ["scrapy_redis"]


def test_the_crawler_process_imports_the_extractor_only_in_its_workers():
    """The crawler process parses pages (links, page kinds) but extracts in its worker processes: the modules
    a crawl imports there load neither the extractor (its regular expressions: ~0.1 s of CPU at every start,
    before the embedded servers could start) nor trafilatura; the workers' forkserver preloads the extractor."""
    code = ("import crawler.commands.crawl, crawler.settings, crawler.spiders.news, crawler.spiders.fiction\n"
            "import pipelines.early, pipelines.extract, pipelines.fingerprint, pipelines.dedup, pipelines.store\n"
            "import pipelines.infringement, storage.store\n"
            "from pipelines._workers import PRELOAD\nassert 'extract.article' in PRELOAD")
    assert modules_after(code, ("extract.article", "extract.boilerplate", "extract.tails", "trafilatura")) == []


FORKSERVER_PROBE = """
import asyncio, os, sys, threading
from multiprocessing import forkserver
from scrapy.settings import Settings
from crawler import settings
from crawler.commands.crawl import Command
from pipelines._workers import WorkerPool
s = Settings()
s.setmodule(settings)
for pair in sys.argv[1:]:
    s.set(*pair.split('=', 1))
command = Command()
command.settings = s
command.start_early()
for thread in threading.enumerate():
    if thread.name == 'zhdedup-forkserver-start':
        thread.join(120)
started = forkserver._forkserver._forkserver_pid is not None
warm = None
if started:   # a worker forked before any warm-up of its own: what the forkserver had ready
    pool = WorkerPool(1)
    pool.start(os.getpid)
    warm = asyncio.run(pool.run(eval, "(bool(__import__('fingerprint.segmenter').segmenter._TABLE), "
                                      "'trafilatura' in __import__('sys').modules)"))
    pool.close()
print(started, warm)
"""


@pytest.mark.parametrize("settings, expected", [
    ((), "True (True, True)"),
    (("ZHDEDUP_EXTRACT_WORKERS=many",), "False None"),
    (("ZHDEDUP_SIMHASH_K=many",), "False None"),
    (("ZHDEDUP_EXTRACT_WORKERS=0", "ZHDEDUP_FINGERPRINT_WORKERS=0"), "False None")])
def test_the_crawl_command_starts_a_warm_forkserver_at_once_unless_a_setting_says_no(settings, expected):
    """The workers' forkserver starts as soon as the crawl command has its settings (before Scrapy builds
    EarlyStart) and warms the workers' code, so the first worker is forked with the tokenizer's tables and
    trafilatura loaded; a bad setting or a crawl without workers starts none."""
    import multiprocessing
    import subprocess
    import sys

    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no forkserver on this platform")
    out = subprocess.run([sys.executable, "-c", FORKSERVER_PROBE, *settings], capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected
