"""A worker whose own work is done keeps its spider open while another worker is busy, then closes by
itself DISTRIBUTED_IDLE_CLOSE_SECONDS after the shared crawl is done; the status/reset command works."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import redis

from benchmarks.bench_scaleout import HOSTS, PROJECT_ROOT, SiteServer, load_stories, start_workers, store_env
from crawler.distributed import crawl_keys

pytestmark = pytest.mark.timeout(180)
OTHER = "other-host:4242:feed00"


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    full = {**os.environ, **env, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run([sys.executable, "-m", "crawler.distributed", *args], cwd=PROJECT_ROOT, env=full,
                          capture_output=True, text=True, timeout=60)


def test_waits_for_a_busy_worker_elsewhere_then_closes(servers, tmp_path):
    """Another worker's busy mark (as a crashed or slow process leaves it) holds the spider open until it expires."""
    from storage import open_store

    config = servers.config(var_dir=str(tmp_path / "var"))
    store = open_store(config)
    r = redis.Redis.from_url(config.redis_url)
    workers_key = crawl_keys(config.key_prefix, "news")["workers"]
    try:
        r.zadd(workers_key, {OTHER: float(r.time()[0]) + 600})   # busy (e.g. a slow download) elsewhere
        waiting = "shared crawl not done: 0 request(s) queued, 1 other worker(s) busy"
        with SiteServer(load_stories(2)) as site:
            site.gate.set()
            [worker] = start_workers(1, [site.base(h) + "/" for h in HOSTS], store_env(config), tmp_path,
                                     {"DISTRIBUTED_IDLE_CLOSE_SECONDS": "1"})
            deadline = time.monotonic() + 120
            while waiting not in worker.tail(10**6) and worker.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(2)                                      # still waiting two seconds later
            assert worker.proc.poll() is None, "closed while another worker was busy:\n" + worker.tail()
            # the other worker's mark expires (as after a crash); expired marks are dropped by the next check
            released = time.time()
            r.zadd(workers_key, {OTHER: float(r.time()[0]) - 1})
            worker.finish(60)
        exited = time.time()
        log = worker.tail(10**6)
        assert worker.proc.returncode == 0 and worker.result.get("finish_reason") == "finished", log[-3000:]
        assert exited >= released + 1, "did not wait DISTRIBUTED_IDLE_CLOSE_SECONDS"
        assert exited <= released + 30, "did not close after the other worker's mark expired"
        assert worker.counts.get("stored") == 2 and r.zcard(workers_key) == 0

        env = store_env(config)
        status = _cli(env, "status", "news")
        assert status.returncode == 0 and "queued requests  0" in status.stdout, status.stdout + status.stderr
        seen = int(status.stdout.split("seen URLs")[1].split()[0])
        assert seen == len(site.hits()), (seen, site.hits())
        reset = _cli(env, "reset", "news")
        assert reset.returncode == 0 and r.exists(crawl_keys(config.key_prefix, "news")["dupefilter"]) == 0
    finally:
        store.drop_all()
        store.close()
