"""The source library on real Redis + MongoDB: segments, matching with work offsets, removal, rebuild."""
import json
from pathlib import Path

import opencc
import pytest

from benchmarks.shared_data import FICTION_FILE
from storage.sources import SourceLibrary

BOTH = pytest.mark.parametrize("redis_mode", ["single", "cluster"])  # one Redis, and a 3-master Redis Cluster

DATA = FICTION_FILE


@pytest.fixture(scope="module")
def chapters():
    if not DATA.exists():
        pytest.skip(f"shared data not found at {DATA}")
    with DATA.open(encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(8), f)]


def _book(chapters):
    return "".join(f"{c['chapter_title']}\n{c['text']}\n" for c in chapters[:3])


@BOTH
def test_a_work_is_segmented_and_matched_in_work_offsets(store, chapters):
    lib = SourceLibrary(store)
    book = _book(chapters)
    assert lib.register("sgyy", "三国演义 1-3", book, author="罗贯中") is True
    assert lib.register("sgyy", "三国演义 1-3", book) is False  # same text: nothing to do
    work = store.sources.get("sgyy")
    assert len(work["segments"]) == 3
    second = chapters[1]["text"]
    passage = second[500:1700]
    page = "广告：免费小说\n" + opencc.OpenCC("s2t").convert(passage) + "\n上一章 目录 下一章"
    (m,) = lib.match(page)
    assert m["source_id"] == "sgyy" and m["source_title"] == "三国演义 1-3"
    start = book.index(second) + 500
    (s, e), = m["source_spans"]
    assert abs(s - start) <= 10 and abs(e - (start + 1200)) <= 10
    assert m["segments"][0]["id"] == "sgyy#1"
    assert abs(m["score"] - 1200 / len(second)) < 0.03  # share of that chapter copied
    assert lib.match(chapters[6]["text"]) == []


@BOTH
def test_removed_and_rebuilt(store, chapters):
    lib = SourceLibrary(store)
    lib.register("w1", "第一回", chapters[0]["text"])
    lib.register("w2", "第五回", chapters[4]["text"])
    store.sources.seed_index().clear()  # Redis lost its data
    assert SourceLibrary(store).match(chapters[0]["text"]) == []
    store.rebuild_index()
    assert [m["source_id"] for m in SourceLibrary(store).match(chapters[0]["text"])] == ["w1"]
    assert lib.remove("w1") is True
    assert SourceLibrary(store).match(chapters[0]["text"]) == []
    assert [m["source_id"] for m in SourceLibrary(store).match(chapters[4]["text"])] == ["w2"]


@BOTH
def test_changed_text_replaces_old_seeds(store, chapters):
    lib = SourceLibrary(store)
    lib.register("w", "t", chapters[2]["text"])
    assert lib.register("w", "t", chapters[3]["text"]) is True
    assert SourceLibrary(store).match(chapters[2]["text"]) == []
    assert [m["source_id"] for m in SourceLibrary(store).match(chapters[3]["text"])] == ["w"]


@BOTH
def test_site_licences(store):
    assert store.matches.is_licensed("w", "partner.example") is False
    store.db.licenses.insert_one({"_id": "w|partner.example", "site": "partner.example", "source_id": "w"})
    assert store.matches.is_licensed("w", "partner.example") is True
    assert store.matches.is_licensed("w", None) is False
