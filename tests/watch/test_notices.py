"""From the demo's pirate site to a takedown notice and its follow-up: watch the pirate TOC, confirm
the matches, generate the notice (every confirmed match with its evidence digest, in Chinese and
English, md/txt/html), never notice a match twice, then a later round marks the removed pages."""
from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from admin.takedown import build_notice, evidence_digest, render_notice
from crawler.demo_site.content import BOOK
from crawler.demo_site.server import SiteServer
from crawler.demo_site.sites import SITES, START

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def demo():
    """The demo sites (C: the novel, D: its pirate copy) on free ports."""
    server = SiteServer({"c": SITES["c"], "d": SITES["d"]}).start()
    try:
        yield server
    finally:
        server.stop()


def register_novel(store, base: str) -> None:
    """The rights holder registers the demo novel chapter by chapter (as `python -m crawler demo` does)."""
    from storage.sources import SourceLibrary

    library = SourceLibrary(store)
    for i, (title, paragraphs) in enumerate(BOOK["chapters"], 1):
        library.register(f"demo-dengta-{i:02d}", f"{BOOK['title']} {title}", "\n".join(paragraphs),
                         author=BOOK["author"], url=f"{base}/book/7/{i}.html")


def test_notice_lists_confirmed_matches_and_followup_marks_takedowns(store, watcher, demo):
    register_novel(store, demo.base("c"))
    toc = demo.base("d") + START["d"]
    watcher("--rounds", "1", toc)
    site = store.watch.get(toc)["site"]
    matches = list(store.db.matches.find({"site": site}))
    assert len(matches) == len(BOOK["chapters"])
    for m in matches:
        store.matches.review(str(m["_id"]), "confirm", "tester")
    # one match carries a digest from the evidence store: the notice must use it, not recompute
    store.db.matches.update_one({"_id": matches[0]["_id"]}, {"$set": {"evidence": {"text_sha256": "ab" * 32}}})

    notice, created = build_notice(store, site, contact="rights@example.org")
    assert created and len(notice["items"]) == len(matches)
    for fmt in ("md", "txt", "html"):
        text = render_notice(notice, fmt)
        assert "《信息网络传播权保护条例》第十四条" in text and "DMCA" in text and BOOK["author"] in text
        for m in store.db.matches.find({"site": site}):
            digest, _ = evidence_digest(m)
            assert m["suspect_url"] in text and digest in text
    assert "ab" * 32 in render_notice(notice, "md")
    plain = store.db.matches.find_one({"_id": matches[1]["_id"]})
    assert evidence_digest(plain)[0] == hashlib.sha256(plain["suspect_text"].encode()).hexdigest()
    assert all(item["passages"] for item in notice["items"])

    again, created_again = build_notice(store, site)
    assert not created_again and again["_id"] == notice["_id"]
    assert store.notices.mark_sent(notice["_id"]) and not store.notices.mark_sent(notice["_id"])

    # the pirate removes one chapter (404) and blanks another (200, text gone); the rest stay up
    urls = sorted(i["url"] for i in notice["items"])
    removed, blanked = urls[0], urls[1]
    pages = demo.servers["d"].site
    path_of = lambda u: u[len(demo.base("d")):]  # noqa: E731
    del pages[path_of(removed)]
    pages[path_of(blanked)].body = "<html><body><p>该章节已删除</p></body></html>".encode()
    watcher("--rounds", "1", toc)
    states = {t["_id"]: t for t in store.notices.takedowns(site)}
    assert states[removed]["state"] == "gone" and states[removed]["http_status"] == 404
    assert states[blanked]["state"] == "gone" and states[blanked]["reason"] == "copied passages gone"
    assert states[removed]["gone_at"] is not None
    assert all(states[u]["state"] == "up" and states[u]["checked"] for u in urls[2:])


def test_notices_cli(store, watcher, demo, tmp_path):
    """`python -m admin notices SITE --format txt` prints the notice; nothing confirmed: one line, exit 2."""
    register_novel(store, demo.base("c"))
    toc = demo.base("d") + START["d"]
    watcher("--rounds", "1", toc)
    site = store.watch.get(toc)["site"]
    cmd = [sys.executable, "-m", "admin", "notices", site, "--format", "txt"]
    proc = subprocess.run(cmd, env=watcher.env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no confirmed match" in proc.stderr and "Traceback" not in proc.stderr
    for m in store.db.matches.find({"site": site}):
        store.matches.review(str(m["_id"]), "confirm", "tester")
    proc = subprocess.run(cmd + ["--sent"], env=watcher.env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(demo.base("d")) >= 2 * len(BOOK["chapters"]) and "recorded as sent" in proc.stderr
    proc = subprocess.run(cmd + ["--sent"], env=watcher.env, capture_output=True, text=True, timeout=60)
    assert "already sent" in proc.stderr
    proc = subprocess.run([*cmd[:5], "--followup"], env=watcher.env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.count("UP") == len(BOOK["chapters"])
