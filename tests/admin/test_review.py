"""Issue 30 through the Flask test client: search and filters that find, bulk review, confirm and next,
statements about the live page only from a re-check (against a real HTTP server on 127.0.0.1), odd page
numbers, styled error pages, device cookies against a login spray, notices, and `sources add`."""
from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime, timezone

import pytest

from admin import create_app
from admin.cli import main
from crawler.demo_site.server import SiteServer, html
from tests.admin.conftest import PASSWORD, csrf_from, insert_matches, login
from tests.admin.test_cli import cli_env  # noqa: F401 (fixture)


def rows_of(html_text: str) -> str:
    return html_text[html_text.index('<table class="matches">'):]


def total_of(html_text: str) -> int:
    return int(re.search(r'<strong id="total">(\d+)</strong>', html_text).group(1))


def test_q_searches_titles_sources_and_urls(client, sample):
    page = client.get("/matches/?q=三国演义").get_data(as_text=True)
    assert total_of(page) == 1 and "三国演义 第一回 免费阅读" in rows_of(page)
    assert total_of(client.get("/matches/?q=BOOK/2").get_data(as_text=True)) == 1   # URL, any case
    assert total_of(client.get("/matches/?q=sgyy-1").get_data(as_text=True)) == 3   # the work's id
    made_up = client.get("/matches/?q=不存在的书名xyz").get_data(as_text=True)
    assert total_of(made_up) == 0 and "No matches for these filters" in made_up
    assert total_of(client.get("/matches/?q=.*").get_data(as_text=True)) == 0        # text, not a pattern


def test_site_by_host_part_source_picker_total_and_sorts(client, store, sample):
    assert total_of(client.get("/matches/?site=pirate").get_data(as_text=True)) == 2
    assert total_of(client.get("/matches/?site=PIRATE.EX&status=new").get_data(as_text=True)) == 2
    page = client.get("/matches/").get_data(as_text=True)
    assert '<option value="sgyy-2" >' in page or 'value="sgyy-2"' in page   # the work picker lists titles
    assert total_of(client.get("/matches/?source=sgyy-1").get_data(as_text=True)) == 3
    cov = rows_of(client.get("/matches/?sort=coverage").get_data(as_text=True))
    assert cov.index("三国演义 第一回") < cov.index("evil.example")   # 62.5% before 37%
    assert client.get("/api/matches?sort=coverage_asc").status_code == 200


def test_previous_and_next_pages_with_total(client, store):
    insert_matches(store, 120)
    first = client.get("/matches/?per_page=50").get_data(as_text=True)
    assert total_of(first) == 120 and "page 1 of 3" in first and 'id="prev-page"' not in first
    second = client.get("/matches/?per_page=50&page=2").get_data(as_text=True)
    assert 'id="prev-page"' in second and 'id="next-page"' in second
    assert first.count('name="ids"') == 50


def test_bulk_review_needs_csrf_and_writes_each_history(client, store, sample):
    token = csrf_from(client.get("/matches/").get_data(as_text=True))
    ids = [sample["match_id"], sample["other_id"]]
    assert client.post("/matches/bulk", data={"ids": ids, "action": "dismiss"}).status_code == 400
    assert client.post("/matches/bulk", data={"ids": ids, "action": "delete", "csrf_token": token}).status_code == 400
    resp = client.post("/matches/bulk?site=pirate", data={"ids": ids, "action": "dismiss", "note": "转载授权",
                                                          "csrf_token": token})
    assert resp.status_code == 303 and resp.headers["Location"].endswith("/matches/?site=pirate")
    for mid in ids:
        m = store.matches.get(mid)
        assert m["status"] == "dismissed" and m["history"][-1]["reviewer"] == "alice"
        assert m["history"][-1]["note"] == "转载授权"
    assert store.matches.get(sample["xss_id"])["status"] == "new"


def test_confirm_and_next_goes_to_the_next_unreviewed(client, store, sample):
    mid = sample["match_id"]
    token = csrf_from(client.get(f"/matches/{mid}?site=pirate").get_data(as_text=True))
    resp = client.post(f"/matches/{mid}/review?go=next&site=pirate", data={"action": "confirm", "csrf_token": token})
    assert resp.headers["Location"].endswith(f"/matches/{sample['other_id']}?site=pirate")
    resp = client.post(f"/matches/{sample['other_id']}/review?go=next&site=pirate",
                       data={"action": "dismiss", "csrf_token": token})
    assert resp.headers["Location"].endswith("/matches/?site=pirate")   # nothing new left on that site
    assert [store.matches.get(i)["status"] for i in (mid, sample["other_id"])] == ["confirmed", "dismissed"]


def test_dashboard_counts_follow_a_review_at_once(app, store, sample, reviewer):
    app.config["DASHBOARD_CACHE_SECONDS"] = 600
    c = app.test_client()
    login(c)
    assert re.search(r'<span class="n">3</span> new', c.get("/").get_data(as_text=True))
    token = csrf_from(c.get(f"/matches/{sample['match_id']}").get_data(as_text=True))
    c.post(f"/matches/{sample['match_id']}/review", data={"action": "confirm", "csrf_token": token})
    page = c.get("/").get_data(as_text=True)
    assert re.search(r'<span class="n">2</span> new', page) and re.search(r'<span class="n">1</span> confirmed', page)
    assert '<td class="status-confirmed">confirmed</td>' in page   # the last hour's list shows the status


# ---- statements about the live page ------------------------------------------------------------------
PIRATE = "<html><head><meta charset='utf-8'><title>第一回</title></head><body><div class='article'><h1>第一回</h1>{}</div></body></html>"


@pytest.fixture
def pirate_site(store, sample):
    """The copying page served on 127.0.0.1, with an evidence snapshot of exactly these bytes."""
    body = PIRATE.format("".join(f"<p>{p}</p>" for p in sample["copied"].split("。") if p))
    server = SiteServer({"p": {"/book/1.html": html(body)}}).start()
    url = server.base("p") + "/book/1.html"
    store.db.matches.update_one({"_id": store.db.matches.find_one({"suspect_url": "http://pirate.example/book/1.html"})["_id"]},
                             {"$set": {"suspect_url": url}})
    store.pages.delete_many({})  # dropped as a duplicate: no stored page, as in the demo
    store.evidence.add(sample["match_id"], {"suspect_url": url, "raw": body.encode(), "text": sample["copied"],
                                            "fetched": datetime.now(timezone.utc), "status": 200,
                                            "suspect_spans": [[11, 311]], "source_id": "sgyy-1"})
    try:
        yield server, url
    finally:
        server.stop()


def test_no_change_is_claimed_until_a_recheck_saw_one(client, store, sample, pirate_site):
    server, url = pirate_site
    mid = sample["match_id"]
    page = client.get(f"/matches/{mid}").get_data(as_text=True)
    assert 'id="not-rechecked"' in page and 'id="live-changed"' not in page
    rows = list(csv.DictReader(io.StringIO(client.get("/matches/export.csv").get_data().decode("utf-8-sig"))))
    assert {r["live_page_changed"] for r in rows} == {""} and {r["live_check"] for r in rows} == {"not re-checked"}
    token = csrf_from(page)
    assert client.post(f"/matches/{mid}/recheck", data={"csrf_token": token}).status_code == 303
    assert store.matches.get(mid)["live_check"]["state"] == "unchanged"
    assert 'id="live-unchanged"' in client.get(f"/matches/{mid}").get_data(as_text=True)
    server.servers["p"].site["/book/1.html"] = html(PIRATE.format("<p>本章已删除，请阅读正版。</p>" * 5))
    client.post(f"/matches/{mid}/recheck", data={"csrf_token": token})
    check = store.matches.get(mid)["live_check"]
    assert check["state"] == "changed" and check["at"] and "0 of 1" in check["reason"]
    del server.servers["p"].site["/book/1.html"]
    client.post(f"/matches/{mid}/recheck", data={"csrf_token": token})
    assert store.matches.get(mid)["live_check"]["state"] == "gone"
    row = next(r for r in csv.DictReader(io.StringIO(
        client.get("/matches/export.csv").get_data().decode("utf-8-sig"))) if r["id"] == mid)
    assert row["live_page_changed"] == "True" and row["live_check"] == "gone" and row["live_checked_at"]
    assert server.hits("p")["/robots.txt"] == 1   # robots.txt asked once, as the crawler does


def test_recheck_obeys_robots_txt(client, store, sample):
    server = SiteServer({"p": {"/robots.txt": html("User-agent: *\nDisallow: /\n", content_type="text/plain"),
                               "/x.html": html("<p>x</p>")}}).start()
    try:
        url = server.base("p") + "/x.html"
        store.db.matches.update_one({"_id": store.db.matches.find_one({"title": "第二回"})["_id"]}, {"$set": {"suspect_url": url}})
        token = csrf_from(client.get("/matches/").get_data(as_text=True))
        page = client.post(f"/matches/{sample['other_id']}/recheck", data={"csrf_token": token},
                           follow_redirects=True).get_data(as_text=True)
        assert "Not re-checked: robots.txt" in page and "live_check" not in store.matches.get(sample["other_id"])
        assert "/x.html" not in server.hits("p")
    finally:
        server.stop()


# ---- odd input and error pages -------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/duplicates/", "/matches/", "/api/matches", "/runs/0123456789abcdef01234567/",
                                  "/matches/export.csv"])
@pytest.mark.parametrize("page", ["²", "①", "٣", "1.5", "0x10"])
def test_odd_page_numbers_are_400(client, sample, path, page):
    assert client.get(f"{path}?page={page}").status_code == 400


@pytest.mark.parametrize("method, path, code", [("get", "/no/such/page", 404), ("get", "/matches/x/review", 405),
                                                ("get", "/duplicates/?page=²", 400),
                                                ("get", "/matches/000000000000000000000000", 404)])
def test_error_pages_are_styled_with_navigation(client, method, path, code):
    resp = getattr(client, method)(path)
    body = resp.get_data(as_text=True)
    assert resp.status_code == code and 'id="error-page"' in body and "admin.css" in body
    assert 'href="/matches/"' in body and f"{code} ·" in body


def test_a_500_is_styled_and_hides_the_exception(store, reviewer):
    app = create_app({"STORE": store, "SECRET_KEY": "k" * 40, "PROPAGATE_EXCEPTIONS": False})
    app.add_url_rule("/boom", "boom", lambda: 1 / 0)
    c = app.test_client()
    login(c)
    resp = c.get("/boom")
    body = resp.get_data(as_text=True)
    assert resp.status_code == 500 and 'id="error-page"' in body and "ZeroDivisionError" not in body


# ---- device cookies ------------------------------------------------------------------------------------
def test_spray_from_five_addresses_spares_the_reviewers_own_browser(app, reviewer):
    app.extensions["login_limiter"].clock = lambda: 1000.0   # every try at one instant: no wait runs out
    own = app.test_client()
    assert login(own).status_code == 302 and own.get_cookie("zhdedup_device")
    own.post("/logout", data={"csrf_token": csrf_from(own.get("/").get_data(as_text=True))})
    attackers = [app.test_client() for _ in range(5)]
    codes = []
    for i in range(25):
        c = attackers[i % 5]
        c.environ_base["REMOTE_ADDR"] = f"203.0.113.{i % 5 + 1}"
        codes.append(login(c, password=f"guess {i}").status_code)
    assert codes[:20] == [401] * 20 and 429 in codes[20:]   # the strangers are slowed as before
    assert login(own).status_code == 302                    # the reviewer's browser is not
    stranger = app.test_client()
    stranger.environ_base["REMOTE_ADDR"] = "198.51.100.7"
    assert login(stranger).status_code == 429               # right password, no device cookie: still waits


def test_device_cookie_is_per_user_and_forged_ones_count_as_none(app, store, reviewer):
    from admin.auth import add_user

    add_user(store, "bob", PASSWORD)
    own = app.test_client()
    assert login(own).status_code == 302
    own.set_cookie("zhdedup_device", "forged.value.here")
    for _ in range(app.config["LOGIN_MAX_FAILURES"]):
        login(own, password="nope nope")
    assert login(own).status_code == 429                     # a forged cookie is no device cookie


# ---- notices ---------------------------------------------------------------------------------------------
def test_notice_preview_fields_remembered_holder_and_sent_record(client, store, sample):
    token = csrf_from(client.get("/notices/").get_data(as_text=True))
    client.post("/matches/bulk", data={"ids": [sample["match_id"], sample["other_id"]], "action": "confirm",
                                       "csrf_token": token})
    form = client.get("/notices/").get_data(as_text=True)
    assert 'name="holder"' in form and 'name="contact"' in form and 'name="address"' in form
    fields = {"site": "pirate.example", "holder": "某某出版社", "contact": "legal@example.cn · 010-12345678",
              "address": "北京市东城区某路 1 号", "csrf_token": token}
    preview = client.post("/notices/preview", data=fields).get_data(as_text=True)
    assert "legal@example.cn" in preview and "北京市东城区某路 1 号" in preview and "请填写" not in preview
    assert store.db.notices.count_documents({}) == 0                 # a preview stores nothing
    resp = client.post("/notices/create", data=fields)
    notice = store.db.notices.find_one({})
    assert resp.status_code == 302 and notice["address"] == fields["address"]
    assert store.db.holders.find_one({"_id": "某某出版社"})["contact"] == fields["contact"]
    client.post("/matches/bulk", data={"ids": [sample["xss_id"]], "action": "confirm", "csrf_token": token})
    assert 'data-contact="legal@example.cn · 010-12345678"' in client.get("/notices/").get_data(as_text=True)
    follow = client.get("/notices/").get_data(as_text=True)
    assert "not checked yet" in follow and "still up" not in follow
    nid = str(notice["_id"])
    assert client.post(f"/notices/{nid}/sent", data={"csrf_token": token, "channel": "e-mail"}).status_code == 400
    client.post(f"/notices/{nid}/sent", data={"csrf_token": token, "channel": "e-mail", "recipient": "abuse@pirate.example"})
    sent = store.db.notices.find_one({})
    assert sent["status"] == "sent" and sent["sent_channel"] == "e-mail" and sent["sent_to"] == "abuse@pirate.example"
    assert "by e-mail to abuse@pirate.example" in client.get(f"/notices/{nid}").get_data(as_text=True)


# ---- links -------------------------------------------------------------------------------------------------
def test_detail_links_the_original_and_duplicates_link_their_match(client, store, sample):
    store.db.sources.update_one({"_id": "sgyy-1"}, {"$set": {"url": "https://books.example/sgyy/1.html"}})
    page = client.get(f"/matches/{sample['match_id']}").get_data(as_text=True)
    assert 'id="original-url" href="https://books.example/sgyy/1.html"' in page
    dups = client.get("/duplicates/").get_data(as_text=True)
    assert f'class="original-match" href="/matches/{sample["match_id"]}"' in dups
    assert f'class="copy-match" href="/matches/{sample["xss_id"]}"' in dups


# ---- sources add: all or nothing -----------------------------------------------------------------------------
def test_sources_add_checks_the_whole_file_first_and_names_what_it_added(cli_env, store, tmp_path, capsys):
    bad = tmp_path / "works.jsonl"
    bad.write_text(json.dumps({"id": "w-1", "title": "第一章", "text": "正文" * 50}, ensure_ascii=False) + "\n"
                   + json.dumps({"id": "../etc", "title": "坏", "text": "正文" * 50}) + "\n", encoding="utf-8")
    assert main(["sources", "add", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "works.jsonl:2" in err and "nothing added" in err and "Traceback" not in err
    assert store.sources.all() == []
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"id": "w-1", "title": "第一章", "text": "正文" * 50}, ensure_ascii=False) + "\n"
                    + json.dumps({"id": "w-2", "title": "第二章", "text": "文字" * 50}, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    assert main(["sources", "add", str(good)]) == 0
    out = capsys.readouterr().out
    assert "added\tw-1\t第一章" in out and "added\tw-2\t第二章" in out and "2 added, 0 already registered" in out


@pytest.mark.parametrize("sort", ["newest", "score", "coverage_asc"])
def test_search_pages_by_cursor_find_every_match_once(client, store, sort):
    insert_matches(store, 230)
    for d in store.db.matches.find({}, {"score": 1}):
        store.db.matches.update_one({"_id": d["_id"]}, {"$set": {"source_coverage": d["score"]}})
    want = {str(d["_id"]) for d in store.db.matches.find({}) if "页面 1" in d["title"] and "SITE3" in d["site"].upper()}
    seen, after = [], None
    while True:
        body = client.get(f"/api/matches?q=页面 1&site=Site3&per_page=7&sort={sort}"
                          + (f"&after={after}" if after else "")).get_json()
        seen += [m["id"] for m in body["items"]]
        after = body["next"]
        if not after:
            break
    assert len(seen) == len(set(seen)) and set(seen) == want and want
    assert total_of(client.get("/matches/?q=页面 1&site=Site3").get_data(as_text=True)) == len(want)


def test_skipping_walks_forward_through_the_list(client, store, sample):
    order = [m["id"] for m in client.get("/api/matches?status=new").get_json()["items"]]
    assert len(order) == 3
    for here, there in zip(order, order[1:]):
        page = client.get(f"/matches/{here}?status=new").get_data(as_text=True)
        assert re.search(r'id="next-match" href="/matches/' + there, page), (here, there)
    last = client.get(f"/matches/{order[-1]}?status=new").get_data(as_text=True)
    assert re.search(r'id="next-match" href="/matches/' + order[0], last)   # from the top again


def test_recheck_fetches_web_pages_only_and_refuses_redirects_elsewhere():
    """A crawled page is hostile: a re-check never reads a file: URL, nor follows a redirect off http(s)."""
    import http.server
    import threading

    from admin import recheck as rc

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(404 if self.path == "/robots.txt" else 302)
            self.send_header("Location", "ftp://127.0.0.1:1/pub/x")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert rc.polite_fetch("file:///etc/passwd")[0] is None
        status, body, why = rc.polite_fetch(f"http://127.0.0.1:{server.server_port}/page.html")
        assert (status, body) == (302, b""), (status, why)   # refused at the redirect, not followed to ftp
    finally:
        server.shutdown()
