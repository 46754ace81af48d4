"""Issue 18 without a browser: the evidence CLI (verify, export pack), the login limiter's delays,
server-side sessions, cookie and cache headers, and `admin serve` on waitress."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from admin import create_app
from admin.auth import LoginLimiter
from admin.cli import main
from storage.processes import free_port
from tests.admin.conftest import login

RAW = '<html><head><meta charset="gbk"><title>第一回</title></head><body><p>滚滚长江东逝水</p></body></html>'


@pytest.fixture
def cli_env(store_config: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m admin` in-process on the test's store."""
    for key, val in (("MONGO_URI", store_config.mongo_uri), ("REDIS_URL", store_config.redis_url),
                     ("ZHDEDUP_DB", store_config.db_name), ("ZHDEDUP_PREFIX", store_config.key_prefix),
                     ("ZHDEDUP_VAR", str(store_config.var_dir))):
        monkeypatch.setenv(key, val)


def with_evidence(store: Any, n: int = 3) -> list[str]:
    ids = []
    for i in range(n):
        text = f"滚滚长江东逝水，浪花淘尽英雄。第{i}页"
        mid = store.matches.save({"suspect_url": f"http://p.example/{i}", "source_id": "s1", "score": 0.5,
                                  "suspect_spans": [[0, 7]], "source_spans": [[0, 7]]})
        store.evidence.add(mid, {"suspect_url": f"http://p.example/{i}", "final_url": f"http://p.example/{i}",
                                 "raw": RAW.encode("gbk"), "headers": {"content-type": "text/html"}, "status": 200,
                                 "fetched": datetime.now(timezone.utc), "text": text, "suspect_spans": [[0, 7]],
                                 "source_spans": [[0, 7]], "passages": [{"suspect_text": text[:7]}]})
        ids.append(mid)
    return ids


def test_evidence_verify_detects_a_record_changed_in_mongodb(store, cli_env, capsys):
    with_evidence(store)
    assert main(["evidence", "verify"]) == 0
    assert "intact: 3 records" in capsys.readouterr().out
    store.db.evidence.update_one({"_id": 1}, {"$set": {"text": "乙站的文字"}})
    assert main(["evidence", "verify"]) == 1
    err = capsys.readouterr().err
    assert "BROKEN at record 1" in err and "text" in err


def test_evidence_export_pack_checks_itself(store, cli_env, tmp_path, capsys):
    ids = with_evidence(store)
    out = tmp_path / "pack.zip"
    assert main(["evidence", "export", ids[0], str(out)]) == 0
    with zipfile.ZipFile(out) as zf:
        names = set(zf.namelist())
        assert {"README.txt", "raw.bin", "text.txt", "passages.json", "record.json", "proof.json", "check.py"} <= names
        assert zf.read("raw.bin") == RAW.encode("gbk")
        proof = json.loads(zf.read("proof.json"))
        assert len(proof["later_content_digests"]) == 2 and proof["head"]["seq"] == 2
        zf.extractall(tmp_path / "pack")
    ok = subprocess.run([sys.executable, "check.py"], cwd=tmp_path / "pack", capture_output=True, text=True)
    assert ok.returncode == 0 and "FAIL" not in ok.stdout and "not timestamped" in ok.stdout, ok.stdout
    (tmp_path / "pack" / "text.txt").write_text("伪造", encoding="utf-8")
    bad = subprocess.run([sys.executable, "check.py"], cwd=tmp_path / "pack", capture_output=True, text=True)
    assert bad.returncode == 1 and "FAIL text_sha256" in bad.stdout and "FAIL file text.txt" in bad.stdout
    assert main(["evidence", "export", "0" * 24, str(tmp_path / "x.zip")]) == 2
    assert "no match" in capsys.readouterr().err


def test_limiter_delays_grow_per_pair_and_never_lock_by_ip():
    lim = LoginLimiter(max_failures=5, window=900)
    for i in range(50):
        lim.failed("10.0.0.1", f"made-up-{i}", now=100.0)
    assert lim.locked_for("10.0.0.1", "alice", now=100.0) == 0  # a spray of names locks no one else
    for _ in range(5):
        lim.failed("10.0.0.2", "bob", now=200.0)
    assert lim.locked_for("10.0.0.2", "bob", now=200.0) == pytest.approx(2.0)
    lim.failed("10.0.0.2", "bob", now=203.0)
    assert lim.locked_for("10.0.0.2", "bob", now=203.0) == pytest.approx(4.0)
    assert lim.locked_for("10.0.0.3", "bob", now=203.0) == 0  # bob from elsewhere is not held up yet
    for i in range(30):  # many addresses against one name: slowed, capped at a minute
        lim.failed(f"10.1.0.{i}", "carol", now=300.0)
    assert 0 < lim.locked_for("10.9.9.9", "carol", now=300.0) <= 60.0
    assert lim.locked_for("10.9.9.9", "carol", now=361.0) == 0


def test_sessions_are_server_side(app, store, reviewer):
    c = app.test_client()
    assert login(c).status_code == 302
    assert store.db.sessions.count_documents({"user": "alice"}) == 1
    assert c.get("/matches/").status_code == 200
    store.users.end_sessions("alice")
    assert c.get("/matches/").status_code == 302


def test_no_store_and_secure_cookie_setting(store, reviewer, monkeypatch):
    monkeypatch.setenv("ZHDEDUP_SECURE_COOKIES", "1")
    app = create_app({"STORE": store, "SECRET_KEY": "k" * 40, "TESTING": True})
    assert app.config["SESSION_COOKIE_SECURE"] is True
    monkeypatch.setenv("ZHDEDUP_SECURE_COOKIES", "0")
    app = create_app({"STORE": store, "SECRET_KEY": "k" * 40, "TESTING": True})
    c = app.test_client()
    assert "no-store" not in c.get("/login").headers.get("Cache-Control", "")
    login(c)
    assert c.get("/matches/").headers["Cache-Control"] == "no-store"


def _served_header(env: dict, root: Path) -> str:
    """`python -m admin serve` on a free port: the Server header of its login page (another port when another
    process bound the chosen one first)."""
    import urllib.request

    for _ in range(3):
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "admin", "serve", "--port", str(port)], cwd=root, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + 30
            while proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=2) as resp:
                        return resp.headers.get("Server", "")
                except OSError:
                    assert time.monotonic() < deadline, "admin serve did not answer in 30 s"
                    time.sleep(0.2)
            output = proc.stdout.read() if proc.stdout else ""
            assert "already in use" in output, output
        finally:
            proc.terminate()
            proc.wait(10)
    raise AssertionError("three ports taken in a row")


def test_serve_runs_waitress_not_the_development_server(store_config, tmp_path):
    env = {**os.environ, "MONGO_URI": store_config.mongo_uri, "REDIS_URL": store_config.redis_url,
           "ZHDEDUP_DB": store_config.db_name, "ZHDEDUP_PREFIX": store_config.key_prefix,
           "ZHDEDUP_VAR": str(tmp_path / "var"), "ZHDEDUP_SECRET_KEY": "s" * 40}
    server = _served_header(env, Path(__file__).resolve().parents[2])
    assert "Werkzeug" not in server and server == "zhdedup"


def test_evidence_pack_download(client, store):
    mid = with_evidence(store, 1)[0]
    resp = client.get(f"/matches/{mid}/evidence.zip")
    assert resp.status_code == 200 and resp.mimetype == "application/zip"
    import io as _io

    with zipfile.ZipFile(_io.BytesIO(resp.data)) as zf:
        assert zf.read("raw.bin") == RAW.encode("gbk")
    assert 'id="evidence-pack"' in client.get(f"/matches/{mid}").get_data(as_text=True)
    plain = store.matches.save({"suspect_url": "http://q.example/", "source_id": "s1", "score": 0.2})
    assert client.get(f"/matches/{plain}/evidence.zip").status_code == 404
