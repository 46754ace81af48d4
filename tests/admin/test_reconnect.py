"""The admin survives store restarts: 503 naming the server while it is down, reconnects afterwards
(also when the embedded servers come back on other ports). Real embedded servers in a private var dir."""
from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest

from admin import create_app
from admin.auth import add_user
from tests.admin.conftest import PASSWORD, login

pytestmark = pytest.mark.timeout(240)


def _hold(port: int) -> socket.socket:
    """Keep a port busy, so a restarted server has to pick another one."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(1)
    return s


@pytest.mark.parametrize("check_seconds", [0, 60])
def test_admin_answers_503_while_a_server_is_down_and_reconnects(tmp_path: Path, check_seconds: float):
    """check_seconds 0: every request asks where the servers are; 60: only a failed call makes it reconnect."""
    from storage import StoreConfig, open_store
    from storage import servers as srv

    var = tmp_path / "var"
    config = StoreConfig(var_dir=str(var), db_name=f"t_{uuid.uuid4().hex[:8]}", key_prefix="tadm:",
                         retry_seconds=1.0)
    try:
        with open_store(config) as store:   # starts the embedded servers of this var dir
            add_user(store, "alice", PASSWORD)
        app = create_app({"STORE_CONFIG": config, "SECRET_KEY": "test-secret-" + "x" * 40, "TESTING": True,
                          "WTF_CSRF_ENABLED": False, "DASHBOARD_CACHE_SECONDS": 0,
                          "STORE_CHECK_SECONDS": check_seconds})
        client = app.test_client()
        login(client)
        assert client.get("/").status_code == 200
        old = {name: srv.info(var, name).port for name in ("mongo", "redis")}

        srv.stop(var)                                          # `python -m storage stop`
        down = client.get("/")
        page = down.get_data(as_text=True)
        assert down.status_code == 503, page
        assert "is not answering" in page and "python -m storage start" in page
        assert ("MongoDB" in page) or ("Redis" in page)
        api = client.get("/api/sources")
        assert api.status_code == 503 and "unavailable" in api.get_json()["error"]

        srv.ensure_all(var)                                    # same ports
        assert client.get("/").status_code == 200

        srv.stop(var)
        held = [_hold(p) for p in old.values()]
        try:
            srv.ensure_all(var)                                # other ports now
            new = {name: srv.info(var, name).port for name in ("mongo", "redis")}
            assert all(new[n] != old[n] for n in new)
            first = client.get("/").status_code
            assert first == (200 if check_seconds == 0 else first) and first in (200, 503)
            assert client.get("/").status_code == 200, "the admin must follow the servers to their new ports"
        finally:
            for s in held:
                s.close()
    finally:
        srv.stop(var)
