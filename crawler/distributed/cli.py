"""`python -m crawler.distributed status|reset SPIDER`: a distributed crawl's queue, seen URLs and workers."""
from __future__ import annotations

import sys
from typing import Any

from fingerprint.cliparser import OneLineParser

from .addon import crawl_keys, store_redis

DESCRIPTION = "Distributed crawling: N `scrapy crawl` processes share one request queue and URL dupefilter in Redis."


def _resolve_keys(spider: str, job: str | None) -> tuple[Any, dict[str, str]]:
    from storage.connection import redis_client

    url, prefix = store_redis()
    keys = {k: v % {"spider": spider} for k, v in crawl_keys(prefix, job or "%(spider)s").items()}
    return redis_client(url), keys


def main(argv: list[str] | None = None, prog: str = "python -m crawler.distributed") -> int:
    """`python -m crawler.distributed status|reset SPIDER [--job NAME]`."""
    parser = OneLineParser(prog=prog, description=DESCRIPTION)
    parser.add_argument("command", choices=["status", "reset"])
    parser.add_argument("spider", help="spider name (the default job name)")
    parser.add_argument("--job", help="job name when the crawl used DISTRIBUTED_JOB / ZHDEDUP_CRAWL_JOB")
    args = parser.parse_args(argv)
    r, keys = _resolve_keys(args.spider, args.job)
    if args.command == "status":
        now = float(r.time()[0])
        busy = r.zrangebyscore(keys["workers"], now, "+inf")
        print(f"queued requests  {r.zcard(keys['requests'])}\nseen URLs        {r.scard(keys['dupefilter'])}\n"
              f"in flight        {r.zcard(keys['inflight'])} (leased by workers; a dead worker's come back)\n"
              f"busy workers     {len(busy)}")
        for w in busy:
            print(f"  {w.decode()}")
        return 0
    if r.zcount(keys["workers"], float(r.time()[0]), "+inf"):
        print("workers are still registered; stop them first (or wait for their marks to expire)", file=sys.stderr)
        return 1
    print(f"deleted {r.delete(*keys.values())} key(s) of {keys['requests'].rsplit(':', 1)[0]}")
    return 0
