"""The embedded servers require credentials kept only in var/ (0600 file, 0700 directories)."""
from __future__ import annotations

import json
import stat
from pathlib import Path

import pymongo
import pytest
import redis
from pymongo.errors import OperationFailure

from storage import servers as srv


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_servers_refuse_clients_without_the_generated_passwords(servers):
    if not servers.embedded:
        pytest.skip("MONGO_URI / REDIS_URL point at servers this project does not start")
    var = Path(servers.var_dir)
    creds_file = var / srv.CREDENTIALS
    creds = json.loads(creds_file.read_text())
    assert mode(creds_file) == 0o600 and len(creds["redis"]) >= 24 and len(creds["mongo"]) >= 24
    for d in (var, var / "run", var / "log", var / "mongo", var / "redis"):
        assert mode(d) == 0o700, d
    assert all(mode(f) & 0o077 == 0 for f in (var / "mongo").rglob("*") if f.is_file())
    assert mode(var / "run" / "redis.conf") == 0o600
    r, m = srv.info(var, "redis"), srv.info(var, "mongo")
    assert r.running and m.running and creds["redis"] in r.uri and creds["mongo"] in m.uri

    with pytest.raises(redis.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=r.port).ping()
    assert redis.Redis.from_url(r.uri).ping()

    anon = pymongo.MongoClient(f"mongodb://127.0.0.1:{m.port}/?directConnection=true", serverSelectionTimeoutMS=2000)
    try:
        with pytest.raises(OperationFailure):
            anon.zhdedup.pages.find_one()
    finally:
        anon.close()
    cmdline = (Path("/proc") / str(r.pid) / "cmdline").read_bytes().decode(errors="replace")
    assert creds["redis"] not in cmdline  # not visible in `ps`


def test_a_server_that_does_not_answer_is_named_without_its_password(servers, tmp_path, dead_port):
    """The one-line error of a store that cannot open reaches logs and terminals: no password in it."""
    from storage import StorageUnavailable, StoreConfig, open_store

    port = dead_port
    config = StoreConfig(mongo_uri=servers.mongo_uri, redis_url=f"redis://:s3cret-Pw@127.0.0.1:{port}/0",
                         var_dir=str(tmp_path / "var"), db_name="t_pw", key_prefix="tpw:", timeout_seconds=1.0)
    with pytest.raises(StorageUnavailable) as info:
        open_store(config)
    assert "s3cret-Pw" not in str(info.value) and f"127.0.0.1:{port}" in str(info.value)
