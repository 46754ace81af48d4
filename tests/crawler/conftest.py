"""Fixtures for the crawler tests: the fixture sites on 127.0.0.1 and real `scrapy crawl` subprocesses
against the session's real Redis and MongoDB-wire servers."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from crawler.__main__ import FAST_LOCAL, scrapy_crawl
from crawler.demo_site.server import SiteServer
from tests.crawler.sites import SITES


@pytest.fixture(scope="session")
def sites() -> Iterator[SiteServer]:
    """The fixture sites X, Y, Z, P, each on its own free port of 127.0.0.1."""
    server = SiteServer(SITES).start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class CrawlResult:
    """One finished crawl: exit code, log, and the JSON report of the CrawlSummary extension."""

    returncode: int
    log: str
    report: dict

    @property
    def counts(self) -> dict[str, Any]:
        """The zhdedup/* stats without the prefix."""
        return self.report.get("counts", {})

    @property
    def failed(self) -> dict[str, int]:
        """Failure reason -> count."""
        return self.report.get("failed", {})

    @property
    def skipped(self) -> dict[str, int]:
        """Reason a page was left out on purpose -> count."""
        return self.report.get("skipped", {})


class Crawler:
    """Runs `scrapy crawl` subprocesses on one isolated store (database name + Redis key prefix)."""

    def __init__(self, config, tmp: Path) -> None:
        self.config = config
        self.tmp = tmp

    @property
    def env(self) -> dict[str, str]:
        """How a subprocess finds the same store."""
        return {"MONGO_URI": self.config.mongo_uri, "REDIS_URL": self.config.redis_url,
                "ZHDEDUP_DB": self.config.db_name, "ZHDEDUP_PREFIX": self.config.key_prefix,
                "ZHDEDUP_VAR": str(self.config.var_dir)}

    def __call__(self, spider: str, settings: dict[str, str] | None = None, **args: str) -> CrawlResult:
        """Crawl and return the result; fails the test with the log when the crawl itself fails."""
        report = self.tmp / f"report-{uuid.uuid4().hex[:8]}.json"
        all_settings = {**FAST_LOCAL, "ZHDEDUP_REPORT": str(report), "LOG_LEVEL": "INFO", **(settings or {})}
        proc = scrapy_crawl(spider, args, all_settings, env=self.env, timeout=120)
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"scrapy crawl {spider} exited {proc.returncode}:\n{log[-4000:]}"
        assert report.exists(), f"no report written:\n{log[-4000:]}"
        assert "outcomes do not add up" not in log, log[-4000:]   # every fetched URL has one outcome
        return CrawlResult(proc.returncode, log, json.loads(report.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def module_store(servers, tmp_path_factory) -> Iterator[tuple[Any, Crawler]]:
    """A store shared by the crawls of one test module (fresh db/prefix), and a crawl runner for it."""
    from storage import open_store

    tmp = tmp_path_factory.mktemp("crawl")
    config = servers.config(var_dir=str(tmp / "var"))
    store = open_store(config)
    try:
        yield store, Crawler(config, tmp)
    finally:
        try:
            store.drop_all()
        finally:
            store.close()


def stored_urls(store) -> set[str]:
    """URLs of every stored page."""
    return {d["url"] for d in store.pages.find({}, {"url": 1})}


def duplicates(store) -> dict[str, tuple[str, str]]:
    """url -> (original_url, method) of every recorded duplicate."""
    return {d["url"]: (d.get("original_url"), d.get("method")) for d in store.duplicates.find({})}
