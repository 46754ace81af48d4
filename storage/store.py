"""Store: the one object through which pipelines, the crawler and the admin read and write MongoDB
and Redis; `open_store` connects it.

MongoDB is the truth (pages, duplicates, sources, matches, runs, users); Redis is an index that can
be rebuilt from it (`rebuild_index`). Store is assembled from one class per concern, each in its own
module on top of `Connection` (clients, retry with backoff, restarts, spool): `DedupStore` (dedup.py),
`PageStore` (pages.py), `DuplicateStore` (duplicates.py) and `MaintenanceStore` (maintenance.py: rebuild,
reconcile, purge, status, spool replay). Parts that need nothing of the others are composed instead, each
holding the connection: `store.matches` (matches.py, matchlist.py), `store.evidence` (evidence.py: the
hash-chained evidence log; stamps.py: its RFC 3161 timestamps), `store.runs` (runs.py), `store.sources` (catalog.py: registered works), `store.users` (users.py),
`store.watch` (watch.py), `store.notices` (notices.py). What they share (ids, times, statuses, MongoDB
indexes) is in schema.py; document checks in documents.py.
"""
from __future__ import annotations

from .catalog import Sources
from .config import StoreConfig
from .fpversion import migrate_fingerprints
from .maintenance import MaintenanceStore
from .matches import Matches
from .notices import Notices
from .runs import Runs
from .stamps import StampedLog
from .schema import now, to_oid, to_signed64, to_unsigned64
from .servers import resolve as resolve_servers
from .users import Users
from .watch import WatchList

__all__ = ["Store", "open_store", "resolve_servers", "now", "to_oid", "to_signed64", "to_unsigned64"]


class Store(MaintenanceStore):
    """Every read and write of pages and duplicates, plus the Redis index; infringement matches, their evidence,
    crawl runs, registered works, reviewer accounts, the watch list and takedown notices are parts hung on it
    (`matches`, `evidence`, `runs`, `sources`, `users`, `watch`, `notices`), each over the same connection."""

    def __init__(self, config: StoreConfig, mongo_uri: str, redis_url: str, embedded: dict[str, bool]) -> None:
        super().__init__(config, mongo_uri, redis_url, embedded)
        self.matches = Matches(self)
        self.evidence = StampedLog(self)
        self.runs = Runs(self)
        self.sources = Sources(self)
        self.users = Users(self)
        self.watch = WatchList(self)
        self.notices = Notices(self)

    def ensure_indexes(self) -> None:
        """Every part's MongoDB indexes."""
        super().ensure_indexes()
        self.evidence.ensure_indexes()
        self.watch.ensure_indexes()
        self.notices.ensure_indexes()


def open_store(config: StoreConfig | None = None,
               servers: tuple[str, str, dict[str, bool]] | None = None) -> Store:
    """Connect (starting embedded servers when no URIs are configured, unless `servers` are those resolve_servers
    already gave), create indexes, replay the spool and repair the Redis index (rebuilt when it belongs to
    another store or a later MongoDB)."""
    config = config or StoreConfig.from_env()
    mongo_uri, redis_url, embedded = servers or resolve_servers(config)
    store = Store(config, mongo_uri, redis_url, embedded)
    try:
        store.ping()
        store._retry("mongo", store.ensure_indexes)
        migrate_fingerprints(store)   # pages of another fingerprint version: fingerprinted again, index rebuilt
        if config.replay_spool:
            store.replay_spool()   # repairs the index too
        else:
            store.reconcile_index()
        store.settle_displacements()   # a crawler killed mid-displacement left it half done
        store.new_generation()   # an index that saw this generation is stale for an older MongoDB (identity.py)
    except Exception:
        store.close()
        raise
    return store
