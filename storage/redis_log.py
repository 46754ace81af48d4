"""The embedded Redis's append-only file, kept about as large as the data it holds.

Redis rewrites its append-only file on its own when the file has doubled since the size it had when the
server started (and is over 64 MB). A server restarted between crawls therefore never rewrote it: each
start took the whole file as its new base, so the file grew with every write ever made. On the project's
own var/ after a day of crawls it held 969 MB for 1,508 keys (1 MB of memory), and a crawl that had to
start Redis waited 11 s for it to load before its first request. The embedded server's starter and its
stop rewrite the file when most of it is history (the rewrite took 0.13 s and left 24 kB).
"""
from __future__ import annotations

import logging
import time

logger = logging.getLogger(__name__)

SLACK = 8 * 1024 * 1024   # bytes of history the file may hold beyond twice the data before it is rewritten


def mostly_history(persistence: dict, used_memory: int) -> bool:
    """True when the append-only file is over SLACK and more than twice the server's memory: most of it is
    writes that later writes undid (a freshly rewritten file, an RDB preamble, is smaller than the memory)."""
    return bool(persistence.get("aof_enabled")) and persistence.get("aof_current_size", 0) > max(
        SLACK, 2 * used_memory)


def compact(port: int, secret: str | None, wait: float = 0.0) -> bool:
    """Ask the server on 127.0.0.1:port to rewrite its append-only file if it is mostly history, and wait up
    to `wait` seconds for the rewrite; True if one was asked for. Never raises: a file left long is slow, not
    wrong, so a failure is a warning."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, password=secret, socket_timeout=5, socket_connect_timeout=5)
    deadline = time.monotonic() + wait
    try:
        if not _finished(client, deadline):   # Redis's own rewrite, still running: it does the work
            return False
        persistence = client.info("persistence")
        used = client.info("memory")["used_memory"]
        if not mostly_history(persistence, used):
            return False
        logger.info("Redis's append-only file holds %.1f MB for %.1f MB of data: rewriting it",
                    persistence["aof_current_size"] / 1e6, used / 1e6)
        client.bgrewriteaof()
        _finished(client, deadline)
        return True
    except redis.RedisError as e:
        logger.warning("could not rewrite Redis's append-only file on 127.0.0.1:%s (%s); it stays as it is", port, e)
        return False
    finally:
        client.close()


def _finished(client, deadline: float) -> bool:
    """Wait until no rewrite runs or is scheduled, or the deadline passes; whether none does."""
    while True:
        persistence = client.info("persistence")
        if not (persistence.get("aof_rewrite_in_progress") or persistence.get("aof_rewrite_scheduled")):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
