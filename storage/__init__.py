"""storage: the one place that owns MongoDB and Redis connections, the Redis index and embedded servers.

    from storage import open_store, StoreConfig
    store = open_store(StoreConfig.from_env())   # embedded servers under ./var unless MONGO_URI / REDIS_URL
    res = store.check_and_insert(page_id, content_hash, simhash)   # atomic, one Redis round trip

The names below are imported on first use (PEP 562), so that `from storage import servers` or
`from storage.errors import StorageError` costs only those modules, not pymongo, redis and the fingerprint
tables: a crawl starts its embedded servers before it has imported the rest (docs/performance.md).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import StoreConfig
    from .errors import BadDocument, StorageError, StorageUnavailable
    from .redis_index import DedupResult, RedisSeedIndex, SimHashIndex
    from .store import Store, open_store, to_signed64, to_unsigned64

_WHERE = {"StoreConfig": ".config", "BadDocument": ".errors", "StorageError": ".errors",
          "StorageUnavailable": ".errors", "DedupResult": ".redis_index", "RedisSeedIndex": ".redis_index",
          "SimHashIndex": ".redis_index", "Store": ".store", "open_store": ".store", "to_signed64": ".store",
          "to_unsigned64": ".store"}

__all__ = ["open_store", "Store", "StoreConfig", "DedupResult", "StorageUnavailable", "StorageError",
           "BadDocument", "RedisSeedIndex", "SimHashIndex", "to_signed64", "to_unsigned64"]


def __getattr__(name: str) -> Any:
    """One of the package's names, from its module (imported now, once)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'storage' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value
