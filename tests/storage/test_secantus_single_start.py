"""SecantusDB starts once on a fresh var/, with --auth from its first connection: its user is stored before
it listens (storage/secantus_daemon.py), not by an earlier start without auth (issue 28: ~0.5 s of a cold
crawl's start). The user survives a SIGKILL right after the start, and a password restored from a backup
re-keys it. Real servers, each var dir private to its test."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Iterator

import pymongo
import pytest
from pymongo.errors import OperationFailure

from storage import processes
from storage import servers as srv

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The command line of every server process storage.servers spawns (spawned for real)."""
    seen: list[list[str]] = []

    def counted(cmd: list[str], log: Path) -> int:
        seen.append(list(cmd))
        return processes.spawn(cmd, log)

    monkeypatch.setattr(srv, "spawn", counted)
    return seen


@pytest.fixture
def var(tmp_path: Path) -> Iterator[Path]:
    """A fresh var dir whose servers are stopped afterwards."""
    var = tmp_path / "var"
    yield var
    srv.stop(var)


def works(uri: str) -> bool:
    """A write and a read through uri (with its credentials) succeed."""
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
    try:
        client.probe.items.replace_one({"_id": 1}, {"_id": 1, "ok": True}, upsert=True)
        return client.probe.items.find_one({"_id": 1}) == {"_id": 1, "ok": True}
    except OperationFailure:
        return False
    finally:
        client.close()


def test_a_fresh_var_starts_secantusdb_once_with_auth(var, spawned):
    got = srv.ensure(var, "mongo")
    assert len(spawned) == 1, spawned                          # no provisioning start before it
    assert "--auth" in spawned[0] and "--user" in spawned[0]
    secret = srv.credentials(var, create=False)["mongo"]
    assert secret not in " ".join(spawned[0])                   # the password is read from the 0600 file
    assert works(got.uri)
    assert not works(srv.server_uri("mongo", got.port, None))   # no client without the password
    assert not works(srv.server_uri("mongo", got.port, "not-the-password"))
    assert (var / "mongo" / srv.PROVISIONED).exists()

    srv.stop(var, ("mongo",))
    again = srv.ensure(var, "mongo")                           # provisioned once: a plain --auth start
    assert "--user" not in spawned[1] and "--auth" in spawned[1] and works(again.uri)


def test_the_user_survives_a_sigkill_right_after_the_start(var, spawned):
    got = srv.ensure(var, "mongo")
    os.kill(got.pid, signal.SIGKILL)                            # no clean shutdown, no later checkpoint
    processes.kill_all([got.pid], "mongo", timeout=0.0)         # (returns once it is gone)
    again = srv.ensure(var, "mongo")
    assert again.pid != got.pid and "--user" not in spawned[-1]
    assert works(again.uri)


def test_restored_credentials_re_key_the_existing_user(var, spawned):
    """credentials.json from a backup (another password) and no marker: the user is stored again."""
    srv.ensure(var, "mongo")
    srv.stop(var, ("mongo",))
    creds = json.loads((var / srv.CREDENTIALS).read_text())
    (var / srv.CREDENTIALS).write_text(json.dumps({**creds, "mongo": "a-restored-password-0123456789"}))
    (var / "mongo" / srv.PROVISIONED).unlink()
    got = srv.ensure(var, "mongo")
    assert "--user" in spawned[-1] and got.secret == "a-restored-password-0123456789"
    assert works(got.uri)
    assert not works(srv.server_uri("mongo", got.port, creds["mongo"]))


def test_the_wiredtiger_calibration_leaves_no_database_behind(tmp_path: Path):
    """The daemon's head start on WiredTiger's clock calibration opens a throwaway database in TMPDIR."""
    import subprocess
    import sys

    code = ("import runpy, sys; d = runpy.run_path(sys.argv[1], run_name='secantus_daemon'); "
            "t = d['calibrate_wiredtiger'](); t.join(60); print(t.is_alive())")
    out = subprocess.run([sys.executable, "-c", code, str(srv.DAEMON)], env={**os.environ, "TMPDIR": str(tmp_path)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr
    assert list(tmp_path.iterdir()) == []
