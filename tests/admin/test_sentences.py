"""Issue 27: the admin shows a rewrite (a match, or a copy dropped as `rewrite`) as its sentences side by side,
synonym swaps and other changes marked, unpaired sentences as such, the share aligned, all crawled text escaped;
computed on view from the stored texts, the evidence record left as it was."""
from __future__ import annotations

import re
from typing import Any

import pytest

from fingerprint.matcher import compare_texts
from tests.fingerprint.rewrite_texts import COPY, ORIGINAL

ORIGINAL_URL = "http://news.example/2026/0503/a.html"
COPY_URL = "http://farm.example/p/1.html"


@pytest.fixture
def rewrite(store: Any) -> dict[str, Any]:
    """The story kept, its spun copy dropped as a rewrite (text in the record) and matched against the story
    registered as a source (evidence snapshot of the copy)."""
    page_id = store.save_page({"url": ORIGINAL_URL, "site": "news.example", "title": "五一假期游客", "text": ORIGINAL})
    store.record_duplicate({"url": COPY_URL, "original_id": page_id, "original_url": ORIGINAL_URL, "method": "rewrite",
                            "coverage": 0.62, "sentences": 0.75, "site": "farm.example", "title": "<b>洗稿</b>",
                            "text": COPY})
    store.record_duplicate({"url": "http://mirror.example/x", "original_id": page_id, "original_url": ORIGINAL_URL,
                            "method": "near", "distance": 1, "site": "mirror.example", "title": "镜像"})
    store.sources.add("story-1", "五一假期", ORIGINAL)
    m = compare_texts(ORIGINAL, COPY, source_id="story-1")
    assert m is not None   # the product's matcher finds the rewrite
    match_id = store.matches.save({"suspect_url": COPY_URL, "site": "farm.example", "title": "<b>洗稿</b>",
                                   **m.as_dict(), "source_id": "story-1", "suspect_text": COPY})
    store.evidence.add(match_id, {"suspect_url": COPY_URL, "raw": COPY.encode(), "text": COPY, "source_id": "story-1",
                                  "suspect_spans": m.suspect_spans, "source_spans": m.source_spans})
    dup = store.duplicates.find_one({"url": COPY_URL})
    return {"page_id": page_id, "match_id": match_id, "dup_id": str(dup["_id"])}


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr class="row-(\w+)">', html)


def _assert_pairs_markup(html: str) -> None:
    assert _rows(html) == ["pair", "pair", "added", "dropped", "pair"]
    assert '<span class="w-syn">游人</span>' in html and '<span class="w-syn">游客</span>' in html
    assert '<span class="w-add">值得一提的是</span>' in html and '<span class="w-add">据了解</span>' in html
    assert re.search(r'id="share-smaller">75\.0%<', html) and re.search(r'id="share-original">3 of 4<', html)
    assert "<script>window.__xss" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.__xss=27&lt;/script&gt;&lt;img src=x onerror=" in html


def test_a_rewrite_duplicate_shows_its_sentences_side_by_side(client, store, rewrite):
    listing = client.get("/duplicates/").get_data(as_text=True)
    links = re.findall(r'class="copy-sentences" href="([^"]+)"', listing)
    assert links == [f"/duplicates/{rewrite['dup_id']}/sentences"]   # the rewrite (it also has a match); not the mirror
    resp = client.get(links[0])
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    _assert_pairs_markup(html)
    assert "kept in the copy record" in html and "&lt;b&gt;洗稿&lt;/b&gt;" in html


def test_a_match_shows_its_sentences_from_the_evidence_without_touching_it(client, store, rewrite):
    before = list(store.db.evidence.find({}))
    assert [r["text"] for r in before] == [COPY]
    detail = client.get(f"/matches/{rewrite['match_id']}").get_data(as_text=True)
    assert f'href="/matches/{rewrite["match_id"]}/sentences"' in detail
    resp = client.get(f"/matches/{rewrite['match_id']}/sentences")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    _assert_pairs_markup(html)
    assert "evidence snapshot" in html
    assert list(store.db.evidence.find({})) == before


def test_a_copy_without_a_kept_text_says_so(client, store, rewrite):
    dup = store.duplicates.find_one({"url": "http://mirror.example/x"})
    html = client.get(f"/duplicates/{dup['_id']}/sentences").get_data(as_text=True)
    assert 'id="pairs-unavailable"' in html and "not kept" in html and "<table class=\"pairs\"" not in html


@pytest.mark.parametrize("path", ["/duplicates/nope/sentences", "/duplicates/" + "a" * 24 + "/sentences",
                                  "/matches/nope/sentences"])
def test_unknown_ids_are_404(client, rewrite, path):
    assert client.get(path).status_code == 404


def test_the_view_needs_a_login(app, rewrite):
    resp = app.test_client().get(f"/duplicates/{rewrite['dup_id']}/sentences")
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]
