"""The command lines on a Redis Cluster (REDIS_URL at any node): status shows the index by kind,
rebuild-index and `admin matches` work (they used to die with MovedError)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(module: str, config, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MONGO_URI=config.mongo_uri, REDIS_URL=config.redis_url, ZHDEDUP_DB=config.db_name,
               ZHDEDUP_PREFIX=config.key_prefix, ZHDEDUP_VAR=str(config.var_dir))
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_storage_and_admin_command_lines_on_a_cluster(servers, redis_cluster, tmp_path):
    from storage import open_store

    config = servers.config(var_dir=str(tmp_path / "var"), redis_url=redis_cluster.url)
    with open_store(config) as store:
        pid = store.new_page_id()
        assert store.check_and_insert(pid, "%032x" % 3, 12345).kind == "new"
        store.save_page({"_id": pid, "url": "http://t/c", "content_hash": "%032x" % 3, "simhash": 12345})
        try:
            status = _run("storage", config, "status")
            assert status.returncode == 0, status.stdout + status.stderr
            assert "index    Redis Cluster used_memory" in status.stdout and "simhash 1/1" in status.stdout
            st = json.loads(_run("storage", config, "status", "--json").stdout)
            assert st["index"]["cluster"] is True and st["index"]["pages"] == 1
            rebuilt = _run("storage", config, "rebuild-index")
            assert rebuilt.returncode == 0 and "indexed 1 pages" in rebuilt.stdout, rebuilt.stderr
            matches = _run("admin", config, "matches", "--json")
            assert matches.returncode == 0 and "Traceback" not in matches.stderr, matches.stderr
            assert store.lookup("%032x" % 3, 12345).original_id == pid
        finally:
            store.drop_all()
