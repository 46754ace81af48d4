"""Re-appearance: a noticed pirate page taken down (404) that serves the copy again is found by the next
watch round, flagged as reappeared with the earlier notice, snapshotted again in the evidence chain; a
noticed work copied on a new URL of the same site is flagged the same way."""
from __future__ import annotations

import pytest

from admin.takedown import build_notice
from crawler.demo_site.sites import START
from tests.admin.conftest import app, client, reviewer  # noqa: F401
from tests.watch.test_notices import demo, register_novel  # noqa: F401

pytestmark = pytest.mark.timeout(300)


def test_taken_down_page_back_is_flagged_snapshotted_and_linked(store, watcher, demo):
    register_novel(store, demo.base("c"))
    toc = demo.base("d") + START["d"]
    watcher("--rounds", "1", toc)
    site = store.watch.get(toc)["site"]
    for m in store.db.matches.find({"site": site}):
        store.matches.review(str(m["_id"]), "confirm", "tester")
    notice, _ = build_notice(store, site)
    url = sorted(i["url"] for i in notice["items"])[0]
    pages, path = demo.servers["d"].site, url[len(demo.base("d")):]
    page = pages.pop(path)
    watcher("--rounds", "1", toc)
    assert {t["_id"]: t for t in store.notices.takedowns(site)}[url]["state"] == "gone"
    before = store.db.matches.find_one({"suspect_url": url})
    pages[path] = page                                    # the pirate puts the chapter back
    watcher("--rounds", "1", toc)
    after = store.db.matches.find_one({"suspect_url": url})
    flag = after["reappeared"]
    assert flag["kind"] == "same_url" and flag["notice_ids"] == [notice["_id"]]
    assert after["evidence_seq"] > before["evidence_seq"]   # captured again, though the bytes are the same
    rec = store.evidence.get(after["evidence_seq"])
    assert rec["reappeared"]["notice_ids"] == [notice["_id"]] and store.evidence.verify().ok
    takedown = {t["_id"]: t for t in store.notices.takedowns(site)}[url]
    assert takedown["state"] == "up" and takedown["reappeared_at"] is not None
    others = [m for m in store.db.matches.find({"site": site}) if m["suspect_url"] != url]
    assert others and not any(m.get("reappeared") for m in others)


def test_noticed_work_on_a_new_url_of_the_site_is_flagged(store):
    old = store.matches.save({"suspect_url": "http://p.example/a.html", "source_id": "w1", "site": "p.example",
                              "score": 0.9})
    store.db.matches.update_one({"suspect_url": "http://p.example/a.html"}, {"$set": {"notice_id": "n1"}})
    new = store.matches.save({"suspect_url": "http://p.example/b.html", "source_id": "w1", "site": "p.example",
                              "score": 0.9})
    other_site = store.matches.save({"suspect_url": "http://q.example/b.html", "source_id": "w1", "site": "q.example",
                                     "score": 0.9})
    flag = store.notices.flag_reappearance(new, "http://p.example/b.html", "p.example", "w1")
    assert flag["kind"] == "new_url" and flag["earlier_url"] == "http://p.example/a.html" and flag["notice_ids"] == ["n1"]
    assert store.matches.get(new)["reappeared"]["kind"] == "new_url"
    assert store.notices.flag_reappearance(new, "http://p.example/b.html", "p.example", "w1") is None    # flagged once
    assert store.notices.flag_reappearance(other_site, "http://q.example/b.html", "q.example", "w1") is None
    assert store.notices.flag_reappearance(old, "http://p.example/a.html", "p.example", "w1") is None


def test_match_page_shows_the_reappearance_and_the_notice(client, store):
    mid = store.matches.save({"suspect_url": "http://p.example/b.html", "source_id": "w1", "site": "p.example",
                              "score": 0.9})
    store.matches.save({"suspect_url": "http://p.example/a.html", "source_id": "w1", "site": "p.example", "score": 0.9})
    store.db.matches.update_one({"suspect_url": "http://p.example/a.html"}, {"$set": {"notice_id": "0123456789abcdef01234567"}})
    store.notices.flag_reappearance(mid, "http://p.example/b.html", "p.example", "w1")
    html = client.get(f"/matches/{mid}").get_data(as_text=True)
    assert 'id="evidence-reappeared"' in html and "new URL of the site" in html
    assert "/notices/0123456789abcdef01234567" in html
