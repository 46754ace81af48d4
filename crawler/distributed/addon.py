"""The switch and the settings: `DistributedAddon` makes a crawl one worker of a shared crawl on the store's Redis."""
from __future__ import annotations

import os
from typing import Any

from crawler import settings as defaults   # every setting's default, declared once

ENABLE_ENV = "ZHDEDUP_DISTRIBUTED"


def crawl_keys(key_prefix: str, job: str) -> dict[str, str]:
    """Redis keys of one distributed crawl; the {job} hash tag keeps them on one Redis Cluster shard."""
    if "%" in key_prefix or "%" in job.replace("%(spider)s", ""):
        raise ValueError(f"key prefix / job must not contain '%' (scrapy-redis formats keys): {key_prefix!r} {job!r}")
    if any(c in job.replace("%(spider)s", "") for c in "{}"):
        raise ValueError(f"job name must not contain braces (used as the Redis Cluster hash tag): {job!r}")
    base = f"{key_prefix}crawl:{{{job}}}"
    return {"requests": f"{base}:requests", "dupefilter": f"{base}:seen", "workers": f"{base}:workers",
            "inflight": f"{base}:inflight", "alive": f"{base}:alive", "failed": f"{base}:failed"}


def distributed_settings(redis_url: str, key_prefix: str, job: str = "%(spider)s",
                         idle_close_seconds: float = defaults.DISTRIBUTED_IDLE_CLOSE_SECONDS) -> dict[str, Any]:
    """Scrapy settings that make this process one worker of a shared crawl (merge them, or use the addon)."""
    if not redis_url:
        raise ValueError("distributed mode needs a Redis URL (the store's: embedded or REDIS_URL)")
    keys = crawl_keys(key_prefix, job)
    # short timeouts: Redis calls run in the reactor thread, a hung server must not freeze the crawl
    params: dict[str, Any] = {"socket_timeout": 5, "socket_connect_timeout": 2, "retry_on_timeout": True}
    if _is_cluster(redis_url):  # every key of a crawl carries the {job} hash tag: one slot, scripts work
        params["redis_cls"] = "redis.cluster.RedisCluster"
    return {
        "SCHEDULER": "crawler.distributed.DistributedScheduler",
        "DUPEFILTER_CLASS": "crawler.distributed.FingerprintDupeFilter",
        "SCHEDULER_QUEUE_CLASS": "crawler.distributed.ClaimingPriorityQueue",
        "SCHEDULER_SERIALIZER": "crawler.distributed",       # this module's dumps/loads: JSON, never pickle
        "SCHEDULER_PERSIST": True,          # one process finishing must not flush the queue of the others
        "SCHEDULER_FLUSH_ON_START": False,  # a late joiner must not wipe a running crawl
        "SCHEDULER_QUEUE_KEY": keys["requests"],
        "SCHEDULER_DUPEFILTER_KEY": keys["dupefilter"],
        "DISTRIBUTED_WORKERS_KEY": keys["workers"],
        "DISTRIBUTED_INFLIGHT_KEY": keys["inflight"],   # requests popped and not finished (leases)
        "DISTRIBUTED_ALIVE_KEY": keys["alive"],         # worker -> expiry, refreshed busy or idle
        "DISTRIBUTED_FAILED_KEY": keys["failed"],       # pages that failed in a pipeline: queued by the next run
        "DISTRIBUTED_IDLE_CLOSE_SECONDS": idle_close_seconds,
        "REDIS_URL": redis_url,
        "REDIS_PARAMS": params,
    }


def _is_cluster(redis_url: str) -> bool:
    """The store's Redis is a Redis Cluster (asked from the server, as the store does)."""
    from storage.connection import is_cluster_url

    return is_cluster_url(redis_url)


def store_redis(overrides: dict[str, Any] | None = None) -> tuple[str, str]:
    """(redis_url, key_prefix) of the store: REDIS_URL when set, else the embedded server (started if needed)."""
    from storage import StoreConfig
    from storage import servers as srv

    config = StoreConfig.from_env(**(overrides or {}))
    url = config.redis_url or srv.ensure(config.var_path, "redis").uri
    return url, config.key_prefix


def enabled(settings: Any) -> bool:
    """Distributed mode is on: setting ZHDEDUP_DISTRIBUTED or env ZHDEDUP_DISTRIBUTED=1."""
    env = os.environ.get(ENABLE_ENV, "").strip().lower()
    return settings.getbool("ZHDEDUP_DISTRIBUTED") or env in ("1", "true", "yes", "on")


class DistributedAddon:
    """Scrapy add-on: with distributed mode on, point scheduler and dupefilter at the store's Redis."""

    def update_settings(self, settings: Any) -> None:
        """Merge distributed_settings() at add-on priority (command-line -s values still win)."""
        if not enabled(settings):
            return
        overrides = dict(settings.getdict("ZHDEDUP_STORE"))
        url, prefix = store_redis(overrides)
        url = settings.get("REDIS_URL") or url
        job = settings.get("DISTRIBUTED_JOB") or os.environ.get("ZHDEDUP_CRAWL_JOB") or "%(spider)s"
        idle = settings.getfloat("DISTRIBUTED_IDLE_CLOSE_SECONDS", defaults.DISTRIBUTED_IDLE_CLOSE_SECONDS)
        for name, value in distributed_settings(url, prefix, job, idle).items():
            settings.set(name, value, priority="addon")
