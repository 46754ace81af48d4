"""Every admin route through Flask's test client, on real servers: auth, pages, actions, bad input."""
from __future__ import annotations

import csv
import io
import json

import pytest

from tests.admin.conftest import PASSWORD, XSS_URL, csrf_from, insert_matches, login

GET_ROUTES = ["/", "/dashboard/", "/matches/", "/matches/export.csv", "/matches/export.json",
              "/duplicates/", "/sources/"]


# ------------------------------------------------------------------ permissions and login

@pytest.mark.parametrize("path", GET_ROUTES + ["/matches/abc"])
def test_anonymous_is_redirected_to_login(app, path):
    resp = app.test_client().get(path)
    assert resp.status_code == 302
    assert resp.headers["Location"].startswith("/login?next=")


@pytest.mark.parametrize("path", ["/api/matches", "/api/matches/abc", "/api/sources"])
def test_anonymous_api_gets_401(app, path):
    resp = app.test_client().get(path)
    assert resp.status_code == 401
    assert resp.get_json() == {"error": "login required"}


def test_anonymous_post_changes_nothing(app, store, sample):
    c = app.test_client()
    page = c.get("/login")
    token = csrf_from(page.get_data(as_text=True))
    resp = c.post(f"/matches/{sample['match_id']}/review", data={"action": "confirm", "csrf_token": token})
    assert resp.status_code == 302 and "/login" in resp.headers["Location"]
    assert store.matches.get(sample["match_id"])["status"] == "new"
    assert c.post("/sources/remove", data={"id": "sgyy-1", "csrf_token": token}).status_code == 302
    assert store.sources.get("sgyy-1") is not None


def test_login_wrong_password_then_right(app, reviewer):
    c = app.test_client()
    assert login(c, password="wrong password").status_code == 401
    resp = login(c)
    assert resp.status_code == 302 and resp.headers["Location"] == "/dashboard/"
    assert c.get("/dashboard/").status_code == 200


def test_login_follows_only_relative_next(app, reviewer):
    c = app.test_client()
    assert login(c, next="/matches/?status=new").headers["Location"] == "/matches/?status=new"
    for evil in ["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)",
                 "http:/evil.example"]:
        c2 = app.test_client()
        assert login(c2, next=evil).headers["Location"] == "/dashboard/", evil


def test_login_rate_limited(app, reviewer):
    c = app.test_client()
    for _ in range(app.config["LOGIN_MAX_FAILURES"]):
        assert login(c, password="nope nope nope").status_code == 401
    locked = login(c)  # right password, but locked out
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.get_data(as_text=True)
    assert login(c, user="bob", password="whatever1").status_code == 401  # other user: not locked


def test_browser_subrequests_without_session_get_no_login_form_and_no_cookie(app, reviewer):
    """A browser fetches /favicon.ico (and images, scripts) on its own; answered with the login form,
    such a request without a cookie minted a new CSRF secret whose cookie replaced the one an open
    login form was issued with, and that form's POST failed with 400 (the Chromium login spray test)."""
    form_tab = app.test_client()
    token = csrf_from(form_tab.get("/login").get_data(as_text=True))
    for path, dest in (("/favicon.ico", "image"), ("/matches/", "image"), ("/dashboard/", "script")):
        resp = app.test_client().get(path, headers={"Sec-Fetch-Dest": dest}, follow_redirects=True)
        assert resp.status_code == 401, (path, resp.status_code)
        assert "Set-Cookie" not in resp.headers, path
        assert "csrf_token" not in resp.get_data(as_text=True), path
    nav = app.test_client().get("/matches/", headers={"Sec-Fetch-Dest": "document"})
    assert nav.status_code == 302 and nav.headers["Location"].startswith("/login?next=")
    resp = form_tab.post("/login", data={"username": "alice", "password": "wrong password", "csrf_token": token})
    assert resp.status_code == 401


def test_stale_login_form_is_shown_again_with_a_working_token(app, reviewer):
    """A login form issued with another session cookie (another tab, an expired cookie): CSRF still
    refuses it (400, nothing checked), but the answer is the form again with a message, and its
    token works; other forms keep the bare 400."""
    stale = csrf_from(app.test_client().get("/login").get_data(as_text=True))
    c = app.test_client()
    c.get("/login")  # this client's session has its own CSRF secret
    resp = c.post("/login", data={"username": "alice", "password": PASSWORD, "csrf_token": stale,
                                  "next": "/matches/"})
    assert resp.status_code == 400
    body = resp.get_data(as_text=True)
    assert "login form had expired" in body and 'value="/matches/"' in body
    assert store_session_count(app) == 0  # the password was not checked, no session started
    fresh = csrf_from(body)
    resp = c.post("/login", data={"username": "alice", "password": PASSWORD, "csrf_token": fresh,
                                  "next": "/matches/"})
    assert resp.status_code == 302 and resp.headers["Location"] == "/matches/"
    assert c.post("/logout", data={"csrf_token": stale}).status_code == 400


def store_session_count(app) -> int:
    """Server-side sessions in the app's store."""
    return app.config["STORE"].db.sessions.count_documents({})


def test_logout_needs_post_with_csrf(client):
    assert client.get("/logout").status_code == 405
    assert client.post("/logout").status_code == 400  # no CSRF token
    page = client.get("/dashboard/").get_data(as_text=True)
    assert client.post("/logout", data={"csrf_token": csrf_from(page)}).status_code == 302
    assert client.get("/dashboard/").status_code == 302


def test_security_headers(client):
    resp = client.get("/matches/")
    csp = resp.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert resp.headers["X-Frame-Options"] == "DENY"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert "<script>" not in resp.get_data(as_text=True)  # only external script tags
    login_page = client.application.test_client().get("/login")
    assert "Content-Security-Policy" in login_page.headers


# ------------------------------------------------------------------ pages

def test_dashboard_counts_runs_chart(client, sample):
    html = client.get("/").get_data(as_text=True)
    assert "<svg" in html and "pirate.example" in html
    assert "fiction" in html and "pages=3" in html
    assert 'href="/matches/?status=new"' in html


def rows_of(html: str) -> str:
    """The matches table of a list page (the filter form above it names every work)."""
    return html[html.index('<table class="matches">'):]


def test_matches_list_and_filters(client, sample):
    html = rows_of(client.get("/matches/").get_data(as_text=True))
    assert "三国演义 第一回 免费阅读" in html and "第二回" in html
    html = rows_of(client.get("/matches/?site=evil.example").get_data(as_text=True))
    assert "第二回" not in html and "evil.example" in html
    html = rows_of(client.get("/matches/?score_min=0.5&sort=score").get_data(as_text=True))
    assert "三国演义 第一回" in html and "第二回" not in html
    html = client.get("/matches/?status=confirmed").get_data(as_text=True)
    assert "No matches for these filters" in html
    html = client.get("/matches/?source=sgyy-2").get_data(as_text=True)
    assert "No matches for these filters" in html
    html = client.get("/matches/?date_from=2000-01-01&date_to=2000-12-31").get_data(as_text=True)
    assert "No matches for these filters" in html


@pytest.mark.parametrize("query", ["status=stolen", "sort=__proto__", "score_min=abc", "score_max=1e999",
                                   "date_from=31/12/2026", "page=0", "page=-1", "page=99999999999999",
                                   "per_page=100000", "after=garbage!!", "after=eyJ4IjoxfQ"])
def test_matches_bad_filters_are_400(client, sample, query):
    resp = client.get(f"/matches/?{query}")
    assert resp.status_code == 400
    assert "Bad filter" in resp.get_data(as_text=True)
    api = client.get(f"/api/matches?{query}")
    assert api.status_code == 400 and api.get_json()["error"]
    assert client.get(f"/matches/export.csv?{query}").status_code == 400


def test_page_past_the_end_is_empty(client, sample):
    resp = client.get("/matches/?page=200")
    assert resp.status_code == 200
    assert "No matches for these filters on page 200" in resp.get_data(as_text=True)


def test_cursor_paging_visits_every_match_once_in_order(client, store):
    insert_matches(store, 230)
    for sort, key, rev in (("newest", "created", True), ("score", "score", True), ("oldest", "created", False)):
        seen, after = [], None
        while True:
            url = f"/api/matches?per_page=40&sort={sort}&status=new" + (f"&after={after}" if after else "")
            body = client.get(url).get_json()
            seen += body["items"]
            after = body["next"]
            if not after:
                break
        ids = [m["id"] for m in seen]
        assert len(ids) == len(set(ids)) == 77, sort
        vals = [m[key] for m in seen]
        assert vals == sorted(vals, reverse=rev), sort
    pages = [client.get(f"/api/matches?per_page=50&page={p}").get_json()["items"] for p in (1, 2, 5)]
    assert len(pages[0]) == len(pages[1]) == 50 and len(pages[2]) == 30
    assert not {m["id"] for m in pages[0]} & {m["id"] for m in pages[1]}


def test_match_detail_side_by_side(client, sample):
    html = client.get(f"/matches/{sample['match_id']}").get_data(as_text=True)
    assert html.count('<mark id="suspect-') == 2 and html.count('<mark id="source-') == 2
    assert 'href="#suspect-2"' in html and 'href="#source-2"' in html
    assert sample["source_text"][100:130] in html
    assert 'rel="noopener noreferrer nofollow"' in html
    assert "dna, winnow" in html and "62.0%" in html


@pytest.mark.parametrize("mid", ["000000000000000000000000", "nope", "x" * 300, "%00"])
def test_unknown_match_is_404(client, sample, mid):
    assert client.get(f"/matches/{mid}").status_code == 404
    assert client.get(f"/api/matches/{mid}").status_code == 404


def test_review_actions_recorded_with_reviewer_and_time(client, store, sample):
    mid = sample["match_id"]
    token = csrf_from(client.get(f"/matches/{mid}").get_data(as_text=True))
    resp = client.post(f"/matches/{mid}/review", data={"action": "confirm", "note": "整章照搬", "csrf_token": token})
    assert resp.status_code == 302
    m = store.matches.get(mid)
    assert m["status"] == "confirmed" and m["reviewer"] == "alice"
    assert m["history"][-1]["action"] == "confirm" and m["history"][-1]["note"] == "整章照搬"
    assert m["history"][-1]["at"]
    client.post(f"/matches/{mid}/review", data={"action": "dismiss", "csrf_token": token})
    html = client.get(f"/matches/{mid}").get_data(as_text=True)
    assert "dismissed" in html and "整章照搬" in html


def test_review_rejects_bad_action_and_missing_csrf(client, store, sample):
    mid = sample["match_id"]
    token = csrf_from(client.get(f"/matches/{mid}").get_data(as_text=True))
    assert client.post(f"/matches/{mid}/review", data={"action": "delete", "csrf_token": token}).status_code == 400
    assert client.post(f"/matches/{mid}/review", data={"action": "confirm"}).status_code == 400
    assert client.post(f"/matches/{mid}/review",
                       data={"action": "confirm", "csrf_token": "forged"}).status_code == 400
    assert client.post("/matches/000000000000000000000000/review",
                       data={"action": "confirm", "csrf_token": token}).status_code == 404
    assert store.matches.get(mid)["status"] == "new"


def test_license_whole_site(client, store, sample):
    mid = sample["match_id"]
    token = csrf_from(client.get(f"/matches/{mid}").get_data(as_text=True))
    client.post(f"/matches/{mid}/review",
                data={"action": "license", "whole_site": "1", "note": "授权转载", "csrf_token": token})
    assert store.matches.get(mid)["status"] == "licensed"
    other = store.matches.get(sample["other_id"])
    assert other["status"] == "licensed" and other["history"][-1]["reviewer"] == "alice"
    assert store.matches.get(sample["xss_id"])["status"] == "new"  # another site
    lic = store.db.licenses.find_one({"site": "pirate.example", "source_id": "sgyy-1"})
    assert lic and lic["reviewer"] == "alice"


def test_export_csv_and_json_follow_filters(client, sample):
    resp = client.get("/matches/export.csv?site=pirate.example")
    assert resp.status_code == 200 and "attachment" in resp.headers["Content-Disposition"]
    assert resp.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert resp.get_data().startswith("\ufeffid,".encode("utf-8"))   # the BOM Excel needs for Chinese text
    rows = list(csv.DictReader(io.StringIO(resp.get_data().decode("utf-8-sig"))))
    assert {r["suspect_url"] for r in rows} == {"http://pirate.example/book/1.html",
                                                 "http://pirate.example/book/2.html"}
    row = next(r for r in rows if r["id"] == sample["match_id"])
    passages = json.loads(row["passages"])
    assert passages[0]["text"] == sample["source_text"][100:400] and passages[0]["source"] == [100, 400]
    assert row["created"].startswith("20")
    data = json.loads(client.get("/matches/export.json").get_data(as_text=True))
    assert len(data) == 3
    one = next(d for d in data if d["id"] == sample["match_id"])
    assert one["passages"][1]["source_text"] == sample["source_text"][500:700]
    assert client.get("/matches/export.xml").status_code == 404


def test_csv_export_neutralises_formulas(client, store, sample):
    store.matches.save({"suspect_url": "http://x.example/f", "site": "x.example", "title": "=HYPERLINK(\"x\")",
                        "source_id": "sgyy-1", "score": 0.5})
    text = client.get("/matches/export.csv?site=x.example").get_data(as_text=True)
    assert "'=HYPERLINK" in text


def test_duplicates_clusters_and_search(client, sample):
    html = client.get("/duplicates/").get_data(as_text=True)
    assert "http://mirror.example/a.html" in html and "三国演义 第一回 免费阅读" in html
    assert "2 copies" in html
    html = client.get("/duplicates/?q=mirror").get_data(as_text=True)
    assert "1 copy" in html and "http://mirror.example/a.html" in html
    assert "No duplicate clusters" in client.get("/duplicates/?q=(nothing[").get_data(as_text=True)


def test_passage_duplicates_show_a_dash_for_distance(client, store, sample):
    store.record_duplicate({"url": "http://passages.example/p.html", "original_id": sample["page_id"],
                            "original_url": "http://orig.example/a.html", "method": "passages", "distance": None,
                            "coverage": 0.9, "site": "passages.example", "title": "段落 复制"})
    html = client.get("/duplicates/?q=passages.example").get_data(as_text=True)
    assert "<td>passages</td><td>—</td>" in html and "<td>None</td>" not in html
    assert client.get("/duplicates/?page=abc").status_code == 400
    for odd in ("%C2%B2", "%E2%91%A0", "%D9%A1"):   # '²', '①', Arabic-Indic 1: str.isdigit() says yes to some
        assert client.get(f"/duplicates/?page={odd}").status_code == 400
    assert client.get("/duplicates/?page=99999999").status_code == 400


def test_sources_add_paste_upload_remove(client, store, sample):
    token = csrf_from(client.get("/sources/").get_data(as_text=True))
    resp = client.post("/sources/add", data={"title": "我的文章", "text": "这是一篇原创文章。" * 20, "csrf_token": token})
    assert resp.status_code == 303
    again = client.post("/sources/add", data={"title": "我的文章", "text": "这是一篇原创文章。" * 20,
                                              "csrf_token": token}, follow_redirects=True)
    assert "0 work(s) added, 1 already registered" in again.get_data(as_text=True)
    assert len(store.sources.all()) == 3
    jsonl = "\n".join(json.dumps({"id": f"j{i}", "title": f"章{i}", "text": f"正文{i}" * 30}, ensure_ascii=False)
                      for i in range(3)).encode()
    resp = client.post("/sources/add", data={"file": (io.BytesIO(jsonl), "works.jsonl"), "csrf_token": token},
                       content_type="multipart/form-data", follow_redirects=True)
    assert "3 work(s) added" in resp.get_data(as_text=True)
    txt = "第一章 开端\n很久很久以前……".encode()
    client.post("/sources/add", data={"file": (io.BytesIO(txt), "story.txt"), "csrf_token": token},
                content_type="multipart/form-data")
    assert any(s["title"] == "第一章 开端" for s in store.sources.all())
    bad = client.post("/sources/add", data={"file": (io.BytesIO(b'{"id": 1}\nnot json'), "bad.jsonl"),
                                            "csrf_token": token}, content_type="multipart/form-data",
                      follow_redirects=True)
    assert "Nothing added: bad.jsonl:1" in bad.get_data(as_text=True)
    assert client.post("/sources/add", data={"file": (io.BytesIO(b"x"), "a.pdf"), "csrf_token": token},
                       content_type="multipart/form-data").status_code == 303
    assert len(store.sources.all()) == 7
    assert client.post("/sources/remove", data={"id": "j1", "csrf_token": token}).status_code == 303
    assert store.sources.get("j1") is None
    assert client.post("/sources/remove", data={"id": "nope", "csrf_token": token}).status_code == 404
    assert client.post("/sources/remove", data={"id": "j2"}).status_code == 400  # CSRF
    assert store.sources.get("j2") is not None


def test_api(client, sample):
    body = client.get("/api/matches?sort=score").get_json()
    assert [m["score"] for m in body["items"]] == [0.62, 0.4, 0.31] and body["next"] is None
    one = client.get(f"/api/matches/{sample['match_id']}").get_json()
    assert one["passages"][0]["suspect_text"] == sample["source_text"][100:400]
    assert one["suspect_spans"][0][1] - one["suspect_spans"][0][0] == 300
    sources = client.get("/api/sources").get_json()["items"]
    assert {s["_id"] for s in sources} == {"sgyy-1", "sgyy-2"} and "text" not in sources[0]
    assert client.get("/api/matches/" + "0" * 24).get_json() == {"error": "no such match"}


# ------------------------------------------------------------------ hostile crawled text

def test_crawled_html_is_escaped_everywhere(client, sample):
    pages = [f"/matches/{sample['xss_id']}", "/matches/", "/duplicates/", "/", "/sources/",
             f"/api/matches/{sample['xss_id']}"]
    for path in pages:
        html = client.get(path).get_data(as_text=True)
        assert "<script>window" not in html, path
        assert "<img src=x" not in html, path
        assert 'href="javascript:' not in html.lower(), path
    detail = client.get(f"/matches/{sample['xss_id']}").get_data(as_text=True)
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in detail
    assert "&lt;a href=&#34;javascript:window.__xss=7&#34;&gt;" in detail
    assert f'<span class="unsafe-url">{XSS_URL}</span>' in detail  # shown as text, not a link


def test_removed_user_loses_session(client, store):
    assert client.get("/matches/").status_code == 200
    store.db.users.delete_one({"_id": "alice"})
    assert client.get("/matches/").status_code == 302


def test_dashboard_computes_in_background_then_serves_cache(app, client, sample):
    app.config.update(DASHBOARD_CACHE_SECONDS=60, DASHBOARD_WAIT_SECONDS=0)
    first = client.get("/dashboard/").get_data(as_text=True)
    import time
    deadline = time.time() + 30
    html = first
    while "being computed" in html and time.time() < deadline:
        time.sleep(0.2)
        html = client.get("/dashboard/").get_data(as_text=True)
    assert "Numbers as of" in html and "<svg" in html
    assert "fiction" in first  # recent runs are shown even before the numbers are ready


def test_run_outcomes_page_filters_and_escapes(client, store):
    """A crawl run's outcomes, filtered by outcome and reason; hostile URLs stay text; bad filters are 400s."""
    run_id = store.runs.start("news")
    store.runs.record_outcomes(run_id, [
        {"url": "http://a.example/1.html", "outcome": "stored", "reason": "", "fetched": True},
        {"url": "http://a.example/list.html", "outcome": "skipped", "reason": "list_page", "fetched": True},
        {"url": "http://b.example/1.html", "outcome": "duplicate", "reason": "exact", "fetched": True,
         "original_url": "http://a.example/1.html"},
        {"url": 'http://a.example/<script>alert(1)</script>', "outcome": "failed", "reason": "http_404",
         "fetched": True}])
    store.runs.finish(run_id, {"fetched": 4, "outcome/stored": 1, "outcome/skipped": 1})
    listing = client.get("/runs/").get_data(as_text=True)
    assert f"/runs/{run_id}/" in listing
    page = client.get(f"/runs/{run_id}/?outcome=skipped&reason=list_page").get_data(as_text=True)
    assert "http://a.example/list.html" in page and "http://b.example/1.html" not in page
    every = client.get(f"/runs/{run_id}/").get_data(as_text=True)
    assert "<script>alert(1)" not in every and "&lt;script&gt;" in every
    for bad in ("?outcome=nosuch", "?reason=%3Cx%3E", "?page=0", "?page=%C2%B2"):
        assert client.get(f"/runs/{run_id}/{bad}").status_code == 400, bad
    assert client.get("/runs/not-an-id/").status_code == 404
