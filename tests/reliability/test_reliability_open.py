"""An embedded server killed while the store opens (after it was started, before the first ping) is
restarted like any outage; before, the crawl stopped with 'cannot open the store' (exit 2)."""
from __future__ import annotations

import pytest

from tests.reliability.reliability_helpers import embedded_var, sigkill


@pytest.fixture
def var(tmp_path):
    """Private embedded servers (this test kills them)."""
    yield from embedded_var(tmp_path / "var")


@pytest.mark.parametrize("victim", ["redis", "mongo"])
def test_a_server_killed_between_start_and_ping_is_restarted(var, victim):
    from storage import StoreConfig
    from storage.store import Store, resolve_servers

    config = StoreConfig(var_dir=str(var), db_name="t_open", key_prefix="topen:")
    mongo_uri, redis_url, embedded = resolve_servers(config)   # both running now
    sigkill(var, victim)
    store = Store(config, mongo_uri, redis_url, embedded)
    try:
        store.ping()                                             # restarts the victim, then answers
        assert store.redis.ping() and store.mongo.admin.command("ping")["ok"]
    finally:
        store.close()
