"""scrapy-redis's own RedisSpider on Scrapy 2.19 with RedisStartMixin: start URLs from a Redis list are
read by `async def start()`, fetched, and the spider closes after MAX_IDLE_TIME_BEFORE_CLOSE."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis

from benchmarks.bench_scaleout import PROJECT_ROOT, SiteServer

pytestmark = pytest.mark.timeout(120)
SPIDER = Path(__file__).with_name("redis_start_spider.py")


def test_redis_spider_reads_start_urls_at_start_and_closes(servers, tmp_path):
    """Two URLs pushed to the start list are fetched once each; the process exits by itself."""
    r = redis.Redis.from_url(servers.redis_url)
    key = f"trs{uuid.uuid4().hex[:8]}:start_urls"
    with SiteServer([]) as site:   # an empty site still serves its index page and robots.txt
        site.gate.set()
        urls = [site.base("a") + "/", site.base("a") + "/robots.txt"]
        r.rpush(key, *urls)
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
        cmd = [sys.executable, "-m", "scrapy", "runspider", str(SPIDER), "-s", f"REDIS_URL={servers.redis_url}",
               "-s", f"REDIS_START_URLS_KEY={key}"]
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
        log = proc.stdout + proc.stderr
        hits = site.hits()
    r.delete(key)
    assert proc.returncode == 0 and "'finish_reason': 'finished'" in log, log[-3000:]
    assert all(f"FETCHED {u}" in log for u in urls), log[-3000:]
    assert {u: hits.get(u) for u in urls} == {u: 1 for u in urls}
    assert r.llen(key) == 0
