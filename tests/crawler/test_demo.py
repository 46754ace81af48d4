"""The README's main command: `zhdedup demo` (the console script; `python -m crawler demo` is the same) serves,
crawls with both spiders, reports."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from crawler.__main__ import PROJECT_ROOT

pytestmark = pytest.mark.timeout(240)


def test_demo_keeps_originals_and_names_the_copies(servers, tmp_path):
    """Site A kept, B's reprints dropped as copies of A's stories, D's verbatim chapter dropped."""
    from storage import open_store

    config = servers.config(var_dir=str(tmp_path / "var"))
    env = {**os.environ, "MONGO_URI": config.mongo_uri, "REDIS_URL": config.redis_url,
           "ZHDEDUP_DB": config.db_name, "ZHDEDUP_PREFIX": config.key_prefix, "ZHDEDUP_VAR": config.var_dir}
    entry = "import sys; from zhdedup_cli import main; sys.exit(main())"   # what the `zhdedup` script runs
    proc = subprocess.run([sys.executable, "-c", entry, "demo", "--port", "0"], cwd=PROJECT_ROOT,
                          env=env, capture_output=True, text=True, timeout=220)
    out = proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert re.search(r"site A, the original news: fetched \d+, stored 4,", out), out
    assert re.search(r"site B, the reprints: fetched \d+, stored 1, exact dups 1, near dups 2", out), out
    a = re.search(r"http://127\.0\.0\.1:(\d+)/news/2025/0312/1001\.html", out).group(0)
    assert re.search(r"/a/3001\.shtml\n\s+exact duplicate of " + re.escape(a), out), out
    c6 = re.search(r"http://127\.0\.0\.1:\d+/book/7/6\.html", out).group(0)
    assert re.search(r"/read/88/5042\.html\n\s+exact duplicate of " + re.escape(c6), out), out
    assert "site C, the novel: fetched 7, stored 6" in out
    assert "registered 6 chapters" in out
    store = open_store(config)
    try:
        assert store.pages.count_documents({}) == 4 + 1 + 6 + int(re.search(
            r"site D, the pirate copy: fetched \d+, stored (\d+)", out).group(1))
    finally:
        store.drop_all()
        store.close()
