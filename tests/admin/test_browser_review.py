"""Issue 30 in real headless Chromium against the admin on a real HTTP server on 127.0.0.1: the demo's
novel and pirate sites crawled for real and still served (no change claimed without a re-check; the
re-check itself), reviewing 50 matches by keyboard (key presses counted), bulk review and search,
the layout at 420 px, styled error pages, notices, and the reviewer's own browser during a login spray.

One Chromium per module (a fresh context per test); screenshots go to tests/_artifacts/. With
ZHDEDUP_UPDATE_DOCS=1 the demo's re-checked match also replaces docs/admin-screenshot.png.
"""
from __future__ import annotations

import csv
import io
import os
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import pytest

from crawler.__main__ import FAST_LOCAL, scrapy_crawl
from crawler.demo_site.content import BOOK
from crawler.demo_site.server import SiteServer
from crawler.demo_site.sites import SITES, START
from tests.admin.conftest import PASSWORD, login
from tests.admin.test_browser import ARGS, ARTIFACTS, CHROMIUM, ROOT, live_url  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium for the whole module (contexts are cheap, browsers are not)."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def new_page(chromium: Any, width: int = 1280, height: int = 900) -> Any:
    context = chromium.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    return page


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A fresh browser context and page (no cookies) in the module's Chromium."""
    p = new_page(chromium)
    try:
        yield p
    finally:
        p.context.close()


def log_in(page: Any, base: str, path: str = "/matches/") -> None:
    page.goto(base + path)
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.login button[type=submit]")
    page.wait_for_load_state()


def shot(page: Any, name: str, full: bool = True) -> None:
    page.screenshot(path=str(ARTIFACTS / f"review-{name}.png"), full_page=full)


# ---- the demo, crawled for real, its sites still served ------------------------------------------------
@pytest.fixture
def demo_crawled(store: Any, store_config: Any, tmp_path: Any) -> Iterator[SiteServer]:
    """The demo novel (site C) and its pirate copy (site D) crawled as `python -m crawler demo` does."""
    from storage.sources import SourceLibrary

    server = SiteServer({"c": SITES["c"], "d": SITES["d"]}).start()
    env = {"MONGO_URI": store_config.mongo_uri, "REDIS_URL": store_config.redis_url,
           "ZHDEDUP_DB": store_config.db_name, "ZHDEDUP_PREFIX": store_config.key_prefix,
           "ZHDEDUP_VAR": str(tmp_path / "var")}
    try:
        for i, site in enumerate(("c", "d")):
            if i == 1:
                library = SourceLibrary(store)
                for n, (title, paragraphs) in enumerate(BOOK["chapters"], 1):
                    library.register(f"demo-dengta-{n:02d}", f"{BOOK['title']} {title}", "\n".join(paragraphs),
                                     author=BOOK["author"], url=f"{server.base('c')}/book/7/{n}.html")
            proc = scrapy_crawl("fiction", {"toc": server.base(site) + START[site]},
                                {**FAST_LOCAL, "LOG_LEVEL": "WARNING"}, env=env, timeout=180)
            assert proc.returncode == 0, proc.stderr[-3000:]
        yield server
    finally:
        server.stop()


def test_after_the_demo_nothing_claims_a_change_no_check_saw(live_url, page, store, reviewer, demo_crawled,
                                                            tmp_path):
    matches = list(store.db.matches.find({}))
    assert len(matches) == len(BOOK["chapters"]) and all(m.get("evidence_seq") is not None for m in matches)
    assert store.pages.count_documents({"url": {"$in": [m["suspect_url"] for m in matches]}}) == 0  # dropped copies
    log_in(page, live_url)
    assert page.locator("table.matches input.tick").count() == len(matches)   # one checkbox per match
    assert page.locator("#bulk-form input[name=csrf_token]").count() == 1
    assert page.locator("#bulk-confirm, #bulk-dismiss, #bulk-license").count() == 3
    shot(page, "demo-01-list")
    for m in matches:
        page.goto(f"{live_url}/matches/{m['_id']}")
        assert page.locator("#live-changed").count() == 0, m["suspect_url"]
        assert "not re-checked since the snapshot" in page.locator("#evidence-facts").inner_text()
        assert page.locator("#original-url").get_attribute("href").startswith(demo_crawled.base("c"))
    shot(page, "demo-02-detail-not-rechecked", full=False)
    page.click("#btn-recheck")                                         # the site is still served: unchanged
    page.wait_for_load_state()
    assert page.locator("#live-unchanged").count() == 1, page.locator("#evidence-facts").inner_text()
    assert "when checked" in page.locator("#live-state").inner_text()
    shot(page, "demo-03-rechecked", full=False)
    if os.environ.get("ZHDEDUP_UPDATE_DOCS") == "1":   # the README's picture: the demo's pirate chapter
        page.screenshot(path=str(ROOT / "docs" / "admin-screenshot.png"), full_page=False)
    page.goto(live_url + "/matches/")
    with page.expect_download() as dl:
        page.click("#export-csv")
    path = tmp_path / "demo.csv"
    dl.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    assert len(rows) == len(matches)
    assert sorted(r["live_page_changed"] for r in rows) == [""] * (len(matches) - 1) + ["False"]
    page.fill("input[name=q]", BOOK["title"][1:4])                     # part of the novel's title
    page.click("#filters button[type=submit]")
    page.wait_for_load_state()
    assert page.locator("#total").inner_text() == str(len(matches))
    page.fill("input[name=q]", "并不存在的书名")
    page.click("#filters button[type=submit]")
    page.wait_for_load_state()
    assert page.locator("#total").inner_text() == "0" and page.locator("input.tick").count() == 0
    port = demo_crawled.base("d").rsplit(":", 1)[1]
    page.goto(f"{live_url}/matches/?site={port}")                      # the site by a part of its host
    assert page.locator("#total").inner_text() == str(len(matches))
    assert page.goto(live_url + "/duplicates/?page=²").status == 400
    assert page.goto(live_url + "/matches/?page=①").status == 400
    page.goto(live_url + "/matches/")
    page.locator("#tick-all").check()
    page.click("#bulk-confirm")
    page.wait_for_load_state()
    page.goto(live_url + "/notices/")
    for field in ("holder", "contact", "address"):
        assert page.locator(f"#notice-form [name={field}]").count() == 1
    shot(page, "demo-04-notice-form")
    assert page.dialogs == []


# ---- keyboard review -------------------------------------------------------------------------------------
def fifty_new(store: Any) -> None:
    start = datetime.now(timezone.utc) - timedelta(days=1)
    store.db.matches.insert_many([
        {"suspect_url": f"http://copy{i % 4}.example/ch/{i}.html", "site": f"copy{i % 4}.example",
         "title": f"第{i}章 盗版", "source_id": f"work-{i % 3}", "source_title": f"作品 {i % 3}",
         "score": 0.5 + i / 200, "source_coverage": 0.4, "suspect_coverage": 0.9, "status": "new",
         "suspect_text": "盗版正文" * 20, "suspect_spans": [[0, 40]], "source_spans": [[0, 40]], "methods": ["dna"],
         "created": start + timedelta(minutes=i), "updated": start, "history": []} for i in range(50)])


def test_reviewing_50_matches_takes_under_100_key_presses(live_url, page, store, reviewer):
    fifty_new(store)
    log_in(page, live_url)
    assert page.locator("#key-legend").is_visible()
    presses = 0

    def press(key: str) -> None:
        nonlocal presses
        presses += 1
        page.keyboard.press(key)

    press("j")
    assert page.locator("tr.current").count() == 1
    with page.expect_navigation():
        press("Enter")
    assert page.locator("#key-legend").is_visible()
    shot(page, "keys-01-detail", full=False)
    while page.locator("#review-form").count():
        with page.expect_navigation():
            press("c")
        assert presses < 100
    assert store.db.matches.count_documents({"status": "confirmed"}) == 50
    assert all(len(m["history"]) == 1 for m in store.db.matches.find({}))
    assert "No unreviewed match left" in page.locator("main").inner_text()
    shot(page, "keys-02-done")
    print(f"50 matches reviewed with {presses} key presses")
    assert presses == 52


def test_list_keys_bulk_form_search_sort_and_paging(live_url, page, store, reviewer, sample):
    fifty_new(store)
    log_in(page, live_url, "/matches/?per_page=20")
    assert page.locator("#total").inner_text() == "53"
    page.click("#next-page")
    page.wait_for_load_state()
    assert "page 2 of 3" in page.locator("p.summary").inner_text()
    page.click("#prev-page")
    page.wait_for_load_state()
    assert "page 1 of 3" in page.locator("p.summary").inner_text()
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("x")                                           # tick the second row
    page.locator("input.tick").nth(4).check()                          # and the fifth with the mouse
    assert page.locator("#ticked").inner_text() == "2"
    ids = [page.locator("tr[data-id]").nth(i).get_attribute("data-id") for i in (1, 4)]
    with page.expect_navigation():
        page.keyboard.press("d")                                       # dismiss the ticked rows
    assert [store.matches.get(i)["status"] for i in ids] == ["dismissed", "dismissed"]
    assert all(store.matches.get(i)["history"][-1]["action"] == "dismiss" for i in ids)
    page.select_option("#source-picker", label=store.sources.get("sgyy-1")["title"])   # picked by title
    page.fill("input[name=site]", "pirate")                            # a part of the host
    page.click("#filters button[type=submit]")
    page.wait_for_load_state()
    rows = page.locator("table.matches tbody tr[data-id]")
    assert rows.count() == int(page.locator("#total").inner_text()) == 2
    assert all("pirate.example" in t for t in rows.all_inner_texts())
    page.goto(live_url + "/matches/")
    page.click("th >> text=Score")
    page.wait_for_load_state()
    scores = [float(s.rstrip("%")) for s in page.locator("table.matches tbody td:nth-child(4)").all_inner_texts()]
    assert scores == sorted(scores, reverse=True) and "sort=score" in page.url
    shot(page, "list-sorted")
    assert page.dialogs == []


# ---- layout ------------------------------------------------------------------------------------------------
BROKEN_LABELS = """() => {
  const bad = [];
  for (const th of document.querySelectorAll('th')) {
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const re = /[A-Za-z]{2,}/g;
      let m;
      while ((m = re.exec(n.data))) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const tops = new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top)));
        if (tops.size > 1) bad.push(m[0]);
      }
    }
  }
  return bad;
}"""


WIDE = """() => Array.from(document.querySelectorAll('body *')).filter(e => e.scrollWidth > e.clientWidth + 1
  && getComputedStyle(e).overflowX === 'visible' && e.clientWidth > 0).slice(-6)
  .map(e => e.tagName + '.' + e.className + '#' + e.id + ':' + e.scrollWidth + '/' + e.clientWidth)"""


def test_labels_never_break_mid_word_and_420px_is_readable(live_url, chromium, store, reviewer, sample):
    store.db.sources.update_one({"_id": "sgyy-1"}, {"$set": {"url": "https://books.example/" + "x" * 120}})
    for width in (420, 1280):
        page = new_page(chromium, width=width)
        try:
            log_in(page, live_url, f"/matches/{sample['match_id']}")
            for path in (f"/matches/{sample['match_id']}", "/matches/", "/", "/duplicates/", "/notices/"):
                page.goto(live_url + path)
                assert page.evaluate(BROKEN_LABELS) == [], (width, path)
                overflow = page.evaluate("document.documentElement.scrollWidth")
                assert overflow <= width + 1, (width, path, overflow, page.evaluate(WIDE))
            page.goto(live_url + f"/matches/{sample['match_id']}")
            shot(page, f"layout-detail-{width}", full=width == 420)
            sus, src = page.locator("#suspect-text").bounding_box(), page.locator("#source-text").bounding_box()
            if width == 420:
                assert sus["width"] >= width * 0.8 and sus["y"] > src["y"]   # one column, not two squeezed ones
            else:
                assert sus["y"] == src["y"] and sus["x"] > src["x"]          # side by side
        finally:
            page.context.close()


# ---- error pages -------------------------------------------------------------------------------------------
def test_error_pages_are_styled_with_navigation(live_url, app, page, reviewer):
    app.config["PROPAGATE_EXCEPTIONS"] = False
    app.add_url_rule("/boom", "boom", lambda: 1 / 0)
    log_in(page, live_url, "/")
    for path, code in (("/nowhere", 404), ("/matches/x/review", 405), ("/duplicates/?page=²", 400), ("/boom", 500)):
        resp = page.goto(live_url + path)
        assert resp.status == code, path
        assert page.locator("#error-page h1").inner_text().startswith(str(code))
        assert page.locator("header.top nav a").count() >= 5 and page.locator("#error-page a").count() >= 4
        assert page.evaluate("getComputedStyle(document.body).margin") == "0px"   # admin.css applied
        shot(page, f"error-{code}", full=False)
    assert "ZeroDivisionError" not in page.content()


# ---- notices ------------------------------------------------------------------------------------------------
def test_notice_holder_fields_preview_and_sent(live_url, page, store, reviewer, sample):
    for mid in (sample["match_id"], sample["other_id"]):
        store.matches.review(mid, "confirm", "alice")
    log_in(page, live_url, "/notices/")
    assert "not checked yet" not in page.locator("main").inner_text()
    page.fill("#holder", "某某出版社")
    page.fill("#contact", "legal@example.cn")
    page.fill("#address", "北京市东城区某路 1 号")
    page.click("#btn-preview")
    page.wait_for_load_state()
    assert "legal@example.cn" in page.locator("#notice-preview").inner_text()
    assert store.db.notices.count_documents({}) == 0
    shot(page, "notice-01-preview")
    page.click("#btn-create")
    page.wait_for_load_state()
    page.select_option("#sent-channel", "web form")
    page.fill("#sent-recipient", "https://pirate.example/report")
    page.click("#btn-sent")
    page.wait_for_load_state()
    assert "by web form to https://pirate.example/report" in page.locator("#notice-status").inner_text()
    store.matches.review(sample["xss_id"], "confirm", "alice")
    page.goto(live_url + "/notices/")
    assert "not checked yet" in page.locator("#followup").inner_text()
    page.fill("#holder", "某某出版社")
    page.locator("#holder").dispatch_event("change")                  # a known holder fills in the rest
    assert page.input_value("#contact") == "legal@example.cn"
    assert page.input_value("#address") == "北京市东城区某路 1 号"
    shot(page, "notice-02-remembered")


# ---- the reviewer's own browser during a spray ----------------------------------------------------------
def test_own_browser_logs_in_during_a_spray_from_five_addresses(live_url, app, page, chromium, reviewer):
    app.extensions["login_limiter"].clock = lambda: 1000.0   # a busy machine's slow logins let no wait run out
    log_in(page, live_url, "/matches/")
    page.click("form.logout button")
    page.wait_for_load_state()
    codes = []
    attackers = [app.test_client() for _ in range(5)]
    for i in range(25):
        c = attackers[i % 5]
        c.environ_base["REMOTE_ADDR"] = f"203.0.113.{i % 5 + 1}"
        codes.append(login(c, password=f"guess {i}").status_code)
        if i == 12:   # the reviewer comes back in the middle of the spray
            log_in(page, live_url, "/matches/")
            assert page.url.endswith("/matches/")
            page.click("form.logout button")
            page.wait_for_load_state()
    assert 429 in codes[20:]
    log_in(page, live_url, "/matches/")                                 # after 25 tries: still let in
    assert page.url.endswith("/matches/")
    shot(page, "spray-own-browser", full=False)
    stranger = new_page(chromium)
    try:
        log_in(stranger, live_url, "/matches/")                        # same password, no device cookie
        assert "/login" in stranger.url and "Too many failed logins" in stranger.locator("main").inner_text()
    finally:
        stranger.context.close()
