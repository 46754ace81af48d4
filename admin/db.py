"""The admin's data access (as flaskr's db.py): the store of the app, opened once per app and checked, at most
every STORE_CHECK_SECONDS, for embedded servers that moved; the store of a command-line run."""
from __future__ import annotations

import time
from typing import Any

from flask import Flask, current_app, g

from storage.errors import StorageUnavailable


def get_store() -> Any:
    """The app's store object, opened once from the environment (or STORE_CONFIG) unless the config passed one.

    An opened store is re-opened when the embedded servers now listen elsewhere (restarted on new
    ports); while one is down, StorageUnavailable names it (the 503 page) and nothing is started.
    """
    ext = current_app.extensions
    store = ext.get("zhdedup_store")
    if store is not None and current_app.config.get("STORE") is None and not g.get("store_checked") \
            and time.monotonic() >= ext.get("zhdedup_store_next_check", 0.0):
        # at most every STORE_CHECK_SECONDS: asking the servers costs a connection each
        ext["zhdedup_store_next_check"] = time.monotonic() + current_app.config["STORE_CHECK_SECONDS"]
        if _moved(store):
            drop_store()
            store = None
    if store is None:
        store = current_app.config.get("STORE")
        if store is None:
            store = _open_store()
        store.ensure_indexes()  # a store passed in may sit on a freshly dropped database
        ext["zhdedup_store"] = store
    g.store_checked = True
    return store


def store_config() -> Any:
    """The store's settings for the app: STORE_CONFIG or the environment, never starting servers."""

    from storage import StoreConfig

    config = current_app.config.get("STORE_CONFIG") or StoreConfig.from_env()
    # the admin never starts or restarts servers itself, and answers 503 quickly while one is down
    return config.with_(auto_restart=False, retry_seconds=min(config.retry_seconds, 2.0))


def _embedded_down(config: Any) -> None:
    """Raise StorageUnavailable for an embedded server that is not running (read only: starts nothing)."""
    from storage import servers as srv

    for name, label, configured in (("mongo", "MongoDB", config.mongo_uri), ("redis", "Redis", config.redis_url)):
        if not configured and not srv.info(config.var_path, name).running:
            raise StorageUnavailable(f"the embedded {label}", f"not running under {config.var_path}",
                                     "start it with `python -m storage start` (a crawl starts it too), "
                                     "then reload this page")


def _open_store() -> Any:
    from storage import open_store

    config = store_config()
    _embedded_down(config)
    return open_store(config)


def _moved(store: Any) -> bool:
    """True when an embedded server of this store is down or now listens on another port."""
    from storage import servers as srv

    config = store.config
    for name, uri in (("mongo", store.mongo_uri), ("redis", store.redis_url)):
        if store.embedded.get(name):
            cur = srv.info(config.var_path, name)
            if not cur.running or cur.uri != uri:
                return True
    return False


def drop_store() -> None:
    """Forget a store the app opened itself (the next request opens it again, where the servers now are)."""
    store = current_app.extensions.pop("zhdedup_store", None)
    if store is not None and current_app.config.get("STORE") is None:
        try:
            store.close()
        except Exception:  # noqa: BLE001 - a dead connection may fail to close; it is dropped anyway
            pass


def open_default_store() -> Any:
    """The store the environment points at (embedded servers under var/ by default), for command-line runs."""
    from storage import StoreConfig, open_store

    return open_store(StoreConfig.from_env())


def teardown_store(exc: BaseException | None = None) -> None:
    """End of an app context: the next request checks again where the embedded servers listen."""
    g.pop("store_checked", None)


def init_app(app: Flask) -> None:
    """Register the store's teardown with the app (the store itself is opened on first use)."""
    app.teardown_appcontext(teardown_store)
