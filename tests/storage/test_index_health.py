"""Index health by kind: a store opened on an empty Redis (a new external server, a wiped one) rebuilds the
exact/SimHash tables, the passage sketches and the registered works' seeds before the first check."""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from storage.redis_index import delete_matching, glob_escape
from storage.sources import SourceLibrary

BOTH = pytest.mark.parametrize("redis_mode", ["single", "cluster"])  # one Redis, and a 3-master Redis Cluster
DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "fiction_classics_dev.jsonl"


@pytest.fixture(scope="module")
def chapter() -> str:
    if not DATA.exists():
        pytest.skip(f"shared data not found at {DATA}")
    with DATA.open(encoding="utf-8") as f:
        return json.loads(f.readline())["text"]


@BOTH
def test_empty_redis_is_refilled_by_kind_on_open(store, store_config, chapter, caplog):
    from storage import open_store

    assert SourceLibrary(store).register("w1", "第一回", chapter) is True
    pid = store.new_page_id()
    store.check_and_insert(pid, "%032x" % 7, 0x0123_4567_89AB_CDEF)
    store.claim_sketch(pid, [11, 22, 33], 2)
    store.save_page({"_id": pid, "url": "http://t/1", "content_hash": "%032x" % 7,
                     "simhash": 0x0123_4567_89AB_CDEF, "sketch": [11, 22, 33], "text": "x"})
    healthy = store.index_health()
    assert healthy == {"simhash": {"mongo": 1, "redis": 1}, "sketches": {"mongo": 1, "redis": 1},
                       "seeds": {"mongo": 1, "redis": 1}}
    delete_matching(store.redis, [glob_escape(store_config.key_prefix) + "*"])  # a new, empty Redis
    assert store.index_health()["seeds"] == {"mongo": 1, "redis": 0}
    with caplog.at_level(logging.WARNING, logger="storage"):
        with open_store(store_config) as st:
            assert st.index_health() == healthy
            (m,) = SourceLibrary(st).match(chapter[200:1500])   # matching works with no manual step
            assert m["source_id"] == "w1"
            assert st.lookup("%032x" % 7, 0).kind == "exact"
            assert [o[0] for o in st.claim_sketch("e" * 32, [11, 22], 2)[1]] == [pid]
            status = st.status()["index"]
            assert status["seeds"] == {"mongo": 1, "redis": 1} and isinstance(status["used_memory"], int)
    text = caplog.text
    for what in ("exact/SimHash", "passage sketches", "seeds of 1 registered work(s) (w1)"):
        assert what in text, text
    assert re.search(r"in \d+\.\d\d s", text), text  # how long it took
