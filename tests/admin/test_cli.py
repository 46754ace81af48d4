"""`python -m admin` commands against the session's real servers."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from admin.auth import check_user
from admin.cli import main
from admin.settings import load_secret_key
from tests.admin.conftest import chapters

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli_env(store, store_config, monkeypatch, tmp_path):
    """Environment that points `python -m admin` at the test's database."""
    env = {"MONGO_URI": store_config.mongo_uri, "REDIS_URL": store_config.redis_url,
           "ZHDEDUP_DB": store_config.db_name, "ZHDEDUP_PREFIX": store_config.key_prefix,
           "ZHDEDUP_VAR": str(tmp_path / "var")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def test_sources_add_list_remove(cli_env, store, tmp_path, capsys):
    ch = chapters(3)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "novel.jsonl").write_text("\n".join(json.dumps({"id": c["id"], "title": c["chapter_title"],
                                                           "text": c["text"][:2000], "author": c["author"]},
                                                          ensure_ascii=False) for c in ch[:2]), encoding="utf-8")
    (lib / "essay.txt").write_text("我的原创散文\n" + ch[2]["text"][:1500], encoding="utf-8")
    (lib / "notes.md").write_text("ignored", encoding="utf-8")
    assert main(["sources", "add", str(lib)]) == 0
    assert "3 added, 0 already registered" in capsys.readouterr().out
    assert main(["sources", "add", str(lib / "essay.txt"), str(lib / "novel.jsonl")]) == 0
    assert "0 added, 3 already registered" in capsys.readouterr().out
    assert len(store.sources.all()) == 3
    essay = next(s for s in store.sources.all() if s["title"] == "我的原创散文")
    assert main(["sources", "list"]) == 0
    out = capsys.readouterr().out
    assert ch[0]["id"] in out and "我的原创散文" in out
    assert main(["sources", "remove", essay["_id"]]) == 0
    assert store.sources.get(essay["_id"]) is None
    assert main(["sources", "remove", "no-such-id"]) == 1


def test_sources_add_bad_input_stores_nothing(cli_env, store, tmp_path, capsys):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"id": "a", "title": "A", "text": "正文" * 50}) + "\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "b", "title": "B", "text": "ok"}\n{"id": "c", "title": "C"}\n', encoding="utf-8")
    assert main(["sources", "add", str(good), str(bad)]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err
    assert main(["sources", "add", str(tmp_path / "missing.txt")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    assert main(["sources", "add", str(tmp_path / "latin1.txt")]) == 2
    assert store.sources.all() == []


def test_matches_listing(cli_env, store, capsys):
    store.matches.save({"suspect_url": "http://p.example/1", "site": "p.example", "source_id": "s1",
                        "score": 0.77, "suspect_spans": [[1, 9]], "source_spans": [[0, 8]]})
    store.matches.save({"suspect_url": "http://p.example/2", "site": "p.example", "source_id": "s1", "score": 0.5})
    assert main(["matches"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "id\tstatus\tscore\tsource_id\tsuspect_url"
    assert len(lines) == 3 and "http://p.example/2" in lines[1] and "0.770" in lines[2]
    assert main(["matches", "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rows[1]["suspect_spans"] == [[1, 9]] and rows[1]["status"] == "new"


def test_users_add_via_subprocess(cli_env, store):
    env = {**os.environ, **cli_env}
    r = subprocess.run([sys.executable, "-m", "admin", "users", "add", "bob", "--password-stdin"],
                       input="s3cret-password\n", capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert check_user(store, "bob", "s3cret-password")
    assert not check_user(store, "bob", "wrong")
    assert store.users.get("bob")["password_hash"].startswith(("scrypt:", "pbkdf2:"))
    r = subprocess.run([sys.executable, "-m", "admin", "users", "add", "carol", "--password-stdin"],
                       input="short\n", capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert r.returncode == 2 and "at least 8" in r.stderr


def test_secret_key_generated_once_with_0600(monkeypatch, tmp_path):
    monkeypatch.delenv("ZHDEDUP_SECRET_KEY", raising=False)
    monkeypatch.setenv("ZHDEDUP_VAR", str(tmp_path / "v"))
    key = load_secret_key()
    path = tmp_path / "v" / "admin_secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_secret_key() == key and len(key) == 64
    monkeypatch.setenv("ZHDEDUP_SECRET_KEY", "from-env")
    assert load_secret_key() == "from-env"


def test_serve_on_a_taken_port_is_one_line_exit_2(cli_env, capsys, monkeypatch):
    import socket

    monkeypatch.setenv("ZHDEDUP_SECRET_KEY", "s" * 40)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        capsys.readouterr()
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: cannot listen on 127.0.0.1:{port}: Address already in use; "
                   "choose another with --host/--port\n")
