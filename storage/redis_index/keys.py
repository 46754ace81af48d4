"""Key-space helpers every index shares: cluster detection, prefix checks, SCAN-and-UNLINK, memory, loss records."""
from __future__ import annotations

import re
from typing import Any, Sequence

import redis
from redis.cluster import RedisCluster


def is_cluster(client: Any) -> bool:
    """True for a Redis Cluster client (storage.connection.redis_client picks it from the server)."""
    return isinstance(client, RedisCluster)


def used_memory(client: Any) -> int:
    """Bytes Redis uses (summed over a cluster's primaries)."""
    if is_cluster(client):
        return sum(int(i["used_memory"]) for i in client.info("memory", target_nodes=RedisCluster.PRIMARIES).values())
    return int(client.info("memory")["used_memory"])


def record_loss(client: Any, guard: Sequence[Any]) -> bytes | None:
    """A data loss seen: recorded under the lost key for the window unless already; returns its token."""
    _, lost, _, window, fresh = guard
    client.set(lost, fresh, nx=True, ex=int(window))
    return client.get(lost)


def check_prefix(prefix: str) -> None:
    """A key prefix with braces would replace the hash tags that spread the index over the shards."""
    if "{" in prefix or "}" in prefix:
        raise ValueError(f"the Redis key prefix must not contain braces on a Redis Cluster: {prefix!r}")


def glob_escape(prefix: str) -> str:
    """Escape glob characters of a key prefix for SCAN MATCH."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", prefix)


def delete_matching(r: redis.Redis, patterns: Sequence[str], extra: Sequence[str] = ()) -> int:
    """SCAN + UNLINK in batches (never KEYS, never FLUSHDB: other projects may share the server)."""
    n = 0
    for pattern in patterns:
        batch = []
        for key in r.scan_iter(match=pattern, count=2000):
            batch.append(key)
            if len(batch) >= 1000:
                n += r.unlink(*batch)
                batch = []
        if batch:
            n += r.unlink(*batch)
    if extra:
        n += r.unlink(*extra)
    return n
