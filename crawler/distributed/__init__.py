"""Distributed crawling: N `scrapy crawl` processes share one request queue and URL dupefilter in Redis.

Built on scrapy-redis 0.9.1 (its Scheduler, PriorityQueue and RFPDupeFilter) with a thin adapter for
Scrapy 2.13+/2.19 and for what a shared crawl needs (docs/scale-out.md says what and why):

- `FingerprintDupeFilter`: URL dedup with the crawler's REQUEST_FINGERPRINTER (tracking parameters
  removed), not scrapy-redis's own SHA1 of the raw URL.
- `ClaimingPriorityQueue`: enqueue is one Lua call (SADD to the dupefilter + ZADD to the queue, so a
  crash between the two cannot lose a URL); pop is one Lua call that also marks this worker busy
  and keeps the request as a lease (`inflight`) until crawler.resume.ResumeMiddleware says its page
  is finished AND crawler.outcomes says the page's outcome is written; leases of a worker whose alive
  mark expired (SIGKILL) go back to the queue (at-least-once fetching; a worker never takes back a
  request of its own, so one run records one outcome per URL).
- `DistributedScheduler`: closes the spider once the shared queue has stayed empty, with no worker
  busy in ANY process, for DISTRIBUTED_IDLE_CLOSE_SECONDS (scrapy-redis spiders idle forever). While
  Redis does not answer, a thread brings it back through the store's retry/restart path (a dead
  embedded Redis is started again); down for DISTRIBUTED_REDIS_OUTAGE_SECONDS, the crawl stops with
  one CRITICAL line (reason storage_unavailable, exit code 1), its leases left in Redis.
- JSON request serialization (`dumps`/`loads`): nothing from a shared Redis is ever unpickled.
- `DistributedAddon`: `ZHDEDUP_DISTRIBUTED=1` (setting or env) merges `distributed_settings(...)` on
  the store's Redis (embedded or REDIS_URL) and key prefix.

Modules: ``addon`` (the switch, the settings, the key layout), ``codec`` (dumps/loads), ``dupefilter``,
``queue`` (the Lua scripts and the queue), ``scheduler`` (with ``outage``: waiting out a Redis outage),
``spider`` (`RedisStartMixin`), ``cli``. The dotted paths Scrapy settings name (``crawler.distributed.
DistributedScheduler``, ``.FingerprintDupeFilter``, ``.ClaimingPriorityQueue``, ``.DistributedAddon``, and
``SCHEDULER_SERIALIZER = "crawler.distributed"``, a module with dumps/loads) are re-exported here.

    python -m crawler.distributed status news     # queue length, seen URLs, busy workers
    python -m crawler.distributed reset news      # forget a finished crawl (queue + seen URLs)
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .addon import ENABLE_ENV, DistributedAddon, crawl_keys, distributed_settings, enabled, store_redis
    from .codec import dumps, loads
    from .dupefilter import FingerprintDupeFilter
    from .outage import UNREACHABLE, until_redis_answers
    from .queue import LEASE, ClaimingPriorityQueue
    from .scheduler import DistributedScheduler
    from .spider import RedisStartMixin

# Imported on first use (PEP 562): every crawl loads DistributedAddon, which must not import scrapy-redis and
# redis (~0.1-0.3 s) on the way to the crawl's early start when distributed mode is off.
_WHERE = {"ENABLE_ENV": ".addon", "DistributedAddon": ".addon", "crawl_keys": ".addon",
          "distributed_settings": ".addon", "enabled": ".addon", "store_redis": ".addon", "dumps": ".codec",
          "loads": ".codec", "FingerprintDupeFilter": ".dupefilter", "UNREACHABLE": ".outage",
          "until_redis_answers": ".outage", "LEASE": ".queue", "ClaimingPriorityQueue": ".queue",
          "DistributedScheduler": ".scheduler", "RedisStartMixin": ".spider"}

__all__ = [
    "ENABLE_ENV", "LEASE", "UNREACHABLE", "ClaimingPriorityQueue", "DistributedAddon", "DistributedScheduler",
    "FingerprintDupeFilter", "RedisStartMixin", "crawl_keys", "distributed_settings", "dumps", "enabled", "loads",
    "store_redis", "until_redis_answers",
]


def __getattr__(name: str) -> Any:
    """One of the package's names, from its module (imported now, once)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'crawler.distributed' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value
