"""Admin pages of watch mode: the watch list (add/remove with CSRF), the dashboard's last hour, and the
notice button and follow-up table."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.admin.conftest import app, client, csrf_from, reviewer, sample  # noqa: F401 (fixtures)


def test_watch_list_add_and_remove(client, store):
    page = client.get("/watch/")
    assert page.status_code == 200 and "nothing watched yet" in page.get_data(as_text=True)
    token = csrf_from(page.get_data(as_text=True))
    url = "http://pirate.example/read/88/"
    assert client.post("/watch/add", data={"url": url, "interval": "60"}).status_code == 400  # no CSRF token
    resp = client.post("/watch/add", data={"url": url, "interval": "60", "kind": "toc", "csrf_token": token},
                       follow_redirects=True)
    assert f"watching {url} every 60 s" in resp.get_data(as_text=True)
    assert store.watch.get(url)["interval"] == 60 and store.watch.get(url)["kind"] == "toc"
    resp = client.post("/watch/add", data={"url": "ftp://x", "interval": "60", "csrf_token": token},
                       follow_redirects=True)
    assert "not added: not an http(s) URL" in resp.get_data(as_text=True) and len(store.watch.all()) == 1
    client.post("/watch/remove", data={"url": url, "csrf_token": token})
    assert store.watch.all() == []


def test_dashboard_shows_last_hour(client, store, sample):
    store.db.matches.update_many({}, {"$set": {"created": datetime.now(timezone.utc) - timedelta(hours=2)}})
    fresh = store.db.matches.find_one({})
    store.db.matches.update_one({"_id": fresh["_id"]}, {"$set": {"created": datetime.now(timezone.utc)}})
    html = client.get("/dashboard/").get_data(as_text=True)
    section = html[html.index('id="last-hour"'):html.index("</section>", html.index('id="last-hour"'))]
    assert fresh["suspect_url"] in section and section.count("<tr>") == 2  # header + one match


def test_notice_button_and_followup(client, store, sample):
    store.matches.review(sample["match_id"], "confirm", "alice")
    site = store.matches.get(sample["match_id"])["site"]
    page = client.get("/notices/").get_data(as_text=True)
    assert "Make notice" in page
    resp = client.post("/notices/create", data={"site": site, "csrf_token": csrf_from(page)}, follow_redirects=True)
    body = resp.get_data(as_text=True)
    assert "notice created" in body and "not checked yet" in body
    notice = store.notices.of_site(site)[0]
    md = client.get(f"/notices/{notice['id']}?format=md")
    assert md.status_code == 200 and "第十四条" in md.get_data(as_text=True)
    assert "page text not kept; no digest" in md.get_data(as_text=True)  # the sample match has no text
    store.notices.record_takedown_check(notice["items"][0]["url"], True, 404, "http 404")
    assert "taken down" in client.get("/notices/").get_data(as_text=True)
    token = csrf_from(body)
    sent = {"csrf_token": token, "channel": "e-mail", "recipient": "abuse@pirate.example"}
    assert client.post(f"/notices/{notice['id']}/sent", data={"csrf_token": token}).status_code == 400  # how? to whom?
    client.post(f"/notices/{notice['id']}/sent", data=sent)
    assert store.notices.get(notice["id"])["status"] == "sent"
    assert store.notices.get(notice["id"])["sent_to"] == "abuse@pirate.example"
    again = client.post(f"/notices/{notice['id']}/sent", data=sent, follow_redirects=True)
    assert "already sent" in again.get_data(as_text=True)


def test_notice_html_escapes_crawled_text(client, store, sample):
    """Titles and URLs come from hostile pages: the HTML notice shows them as text."""
    store.matches.review(sample["xss_id"], "confirm", "alice")
    page = client.get("/notices/").get_data(as_text=True)
    resp = client.post("/notices/create", data={"site": "evil.example", "csrf_token": csrf_from(page)})
    notice = store.notices.of_site("evil.example")[0]
    html = client.get(f"/notices/{notice['id']}?format=html").get_data(as_text=True)
    assert resp.status_code == 302 and "&lt;script&gt;window.__xss=1" in html
    assert "<script>" not in html and "onerror=" not in html.replace("onerror=&#34;", "")
    assert "<script>" not in client.get(f"/notices/{notice['id']}").get_data(as_text=True).split("<main>")[1]
