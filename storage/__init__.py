"""storage: the one place that owns MongoDB and Redis connections, the Redis index and embedded servers.

    from storage import open_store, StoreConfig
    store = open_store(StoreConfig.from_env())   # embedded servers under ./var unless MONGO_URI / REDIS_URL
    res = store.check_and_insert(page_id, content_hash, simhash)   # atomic, one Redis round trip
"""
from .config import StoreConfig
from .errors import BadDocument, StorageError, StorageUnavailable
from .redis_index import DedupResult, RedisSeedIndex, SimHashIndex
from .store import Store, open_store, to_signed64, to_unsigned64

__all__ = ["open_store", "Store", "StoreConfig", "DedupResult", "StorageUnavailable", "StorageError",
           "BadDocument", "RedisSeedIndex", "SimHashIndex", "to_signed64", "to_unsigned64"]
