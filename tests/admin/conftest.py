"""Fixtures for the admin: a Flask app on the session's real servers, a reviewer, sample data."""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from admin import create_app
from admin.auth import add_user
from benchmarks.shared_data import FICTION_FILE

DATA = FICTION_FILE
PASSWORD = "correct horse battery"
XSS_TITLE = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
XSS_TEXT = ('广告<script>window.__xss=5</script>正文 <img src=x onerror="window.__xss=6"> '
            '<a href="javascript:window.__xss=7">点击阅读</a>')
XSS_URL = "javascript:window.__xss=4"


def chapters(n: int) -> list[dict]:
    """The first n chapters of the real fiction data (public-domain novels)."""
    out = []
    with DATA.open(encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if len(out) == n:
                break
    return out


def csrf_from(html: str) -> str:
    """The CSRF token the page's forms carry."""
    m = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert m, "page has no CSRF token"
    return m.group(1)


@pytest.fixture(autouse=True)
def capture(monkeypatch: pytest.MonkeyPatch) -> bool:
    """Rendered captures off: confirming a match here would start Chromium on its page, and the sample pages are
    on *.example hosts, a DNS lookup outside loopback (tests/admin/test_capture.py turns them on, on 127.0.0.1)."""
    from crawler import settings

    monkeypatch.setattr(settings, "ZHDEDUP_CAPTURE", False)
    return False


@pytest.fixture
def app(store: Any, tmp_path: Path) -> Any:
    """The admin app on a fresh, isolated database (CSRF on, dashboard and list-count caches off)."""
    return create_app({"STORE": store, "SECRET_KEY": "test-secret-" + "x" * 40, "TESTING": True,
                       "DASHBOARD_CACHE_SECONDS": 0, "COUNT_CACHE_SECONDS": 0})


@pytest.fixture
def reviewer(store: Any) -> str:
    """A reviewer account."""
    add_user(store, "alice", PASSWORD)
    return "alice"


def login(client: Any, user: str = "alice", password: str = PASSWORD, next: str | None = None) -> Any:
    """Log in through the real form (with its CSRF token)."""
    page = client.get("/login")
    data = {"username": user, "password": password, "csrf_token": csrf_from(page.get_data(as_text=True))}
    if next is not None:
        data["next"] = next
    return client.post("/login", data=data)


@pytest.fixture
def client(app: Any, reviewer: str) -> Any:
    """A test client logged in as the reviewer."""
    c = app.test_client()
    resp = login(c)
    assert resp.status_code == 302
    return c


@pytest.fixture
def sample(store: Any) -> dict[str, Any]:
    """Two real chapters as sources, a copying page with its match, an XSS page/match, a duplicate."""
    ch = chapters(2)
    src = ch[0]["text"][:800]
    store.sources.add("sgyy-1", ch[0]["chapter_title"], src, author=ch[0]["author"])
    store.sources.add("sgyy-2", ch[1]["chapter_title"], ch[1]["text"][:800])
    copied = "本站最新小说免费阅读！" + src[100:400] + "【广告】更多精彩请访问" + src[500:700]
    page_id = store.save_page({"url": "http://pirate.example/book/1.html", "site": "pirate.example",
                               "title": "三国演义 第一回 免费阅读", "text": copied})
    pre = len("本站最新小说免费阅读！")
    mid = pre + 300 + len("【广告】更多精彩请访问")
    mid_id = store.matches.save({
        "suspect_url": "http://pirate.example/book/1.html", "suspect_page_id": page_id,
        "site": "pirate.example", "title": "三国演义 第一回 免费阅读", "fetched": datetime.now(timezone.utc),
        "source_id": "sgyy-1", "source_title": ch[0]["chapter_title"], "score": 0.62,
        "source_coverage": 0.625, "suspect_coverage": 0.9,
        "suspect_spans": [[pre, pre + 300], [mid, mid + 200]], "source_spans": [[100, 400], [500, 700]],
        "methods": ["dna", "winnow"]})
    xss_page = store.save_page({"url": XSS_URL, "site": "evil.example", "title": XSS_TITLE,
                                "text": XSS_TEXT + src[:300]})
    xss_id = store.matches.save({
        "suspect_url": XSS_URL, "suspect_page_id": xss_page, "site": "evil.example",
        "title": XSS_TITLE, "source_id": "sgyy-1", "source_title": XSS_TITLE, "score": 0.4,
        "source_coverage": 0.37, "suspect_coverage": 0.8,
        "suspect_spans": [[len(XSS_TEXT), len(XSS_TEXT) + 300]], "source_spans": [[0, 300]],
        "methods": ["dna"]})
    other_id = store.matches.save({
        "suspect_url": "http://pirate.example/book/2.html", "site": "pirate.example", "title": "第二回",
        "source_id": "sgyy-1", "source_title": ch[0]["chapter_title"], "score": 0.31,
        "suspect_spans": [[0, 100]], "source_spans": [[0, 100]], "methods": ["dna"]})
    store.record_duplicate({"url": "http://mirror.example/a.html", "original_id": page_id,
                            "original_url": "http://pirate.example/book/1.html", "method": "near",
                            "distance": 2, "site": "mirror.example", "title": "镜像 三国"})
    store.record_duplicate({"url": XSS_URL, "original_id": page_id,
                            "original_url": "http://pirate.example/book/1.html", "method": "exact",
                            "distance": 0, "site": "evil.example", "title": XSS_TITLE})
    run = store.runs.start("fiction")
    store.runs.finish(run, {"pages": 3, "duplicates": 2})
    return {"match_id": mid_id, "xss_id": xss_id, "other_id": other_id, "page_id": page_id,
            "source_text": src, "copied": copied}


def insert_matches(store: Any, n: int, start: datetime | None = None, sites: int = 5,
                   sources: int = 7) -> None:
    """n synthetic matches straight into the collection (same shape as upsert_match writes)."""
    start = start or datetime.now(timezone.utc) - timedelta(days=20)
    docs = []
    for i in range(n):
        t = start + timedelta(minutes=7 * (i // 3))  # runs of equal times: the cursor must handle ties
        docs.append({"suspect_url": f"http://site{i % sites}.example/p/{i}", "site": f"site{i % sites}.example",
                     "title": f"页面 {i}", "source_id": f"src-{i % sources}", "source_title": f"作品 {i % sources}",
                     "score": round((i * 37 % 100) / 100, 2), "status": ("new", "confirmed", "dismissed")[i % 3],
                     "suspect_spans": [[0, 50]], "source_spans": [[10, 60]], "methods": ["dna"],
                     "created": t, "updated": t, "history": []})
    store.db.matches.insert_many(docs)
