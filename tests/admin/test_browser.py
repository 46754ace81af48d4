"""Real headless Chromium against the admin on a real HTTP server on 127.0.0.1.

Needs Debian's chromium (`apt-get install -y chromium`; for CJK glyphs in screenshots also
`fonts-wqy-microhei`). Driven by Playwright's Python package with executable_path; never downloads
a browser. Screenshots go to tests/_artifacts/; with ZHDEDUP_UPDATE_DOCS=1 the detail page also
replaces docs/admin-screenshot.png (the README's picture), so a test run never dirties the tree.
"""
from __future__ import annotations

import csv
import io
import os
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.admin.conftest import PASSWORD, insert_matches

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
        "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "_artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)"),
]


@pytest.fixture
def live_url(app: Any) -> Iterator[str]:
    """The app served by werkzeug on a free 127.0.0.1 port in a thread."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


@pytest.fixture
def browser_page() -> Iterator[Any]:
    """A fresh page in headless Chromium, with a record of every dialog that opened."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
            page = context.new_page()
            page.dialogs = []
            page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
            page.set_default_timeout(15_000)
            yield page
        finally:
            browser.close()


def log_in(page: Any, base: str, path: str) -> None:
    page.goto(base + path)
    assert "/login" in page.url
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.login button[type=submit]")
    page.wait_for_load_state()


def test_review_flow_in_chromium(live_url, browser_page, store, reviewer, sample, tmp_path):
    page = browser_page
    insert_matches(store, 60)
    log_in(page, live_url, "/matches/")
    assert page.url.startswith(live_url + "/matches/")  # back where we wanted to go
    page.screenshot(path=str(ARTIFACTS / "01-matches.png"), full_page=True)
    assert page.locator("#next-page").count() == 1  # 63 matches: more than one page

    # filter
    page.select_option("select[name=status]", "new")
    page.fill("input[name=site]", "pirate.example")
    page.click("#filters button[type=submit]")
    page.wait_for_load_state()
    rows = page.locator("table.matches tbody tr")
    assert rows.count() == 2
    page.screenshot(path=str(ARTIFACTS / "02-filtered.png"), full_page=True)

    # open the match, jump to the second passage
    page.click("text=三国演义 第一回 免费阅读")
    page.wait_for_load_state()
    assert page.locator("#suspect-text mark").count() == 2
    page.screenshot(path=str(ARTIFACTS / "03-detail.png"), full_page=False)
    if os.environ.get("ZHDEDUP_UPDATE_DOCS") == "1":
        page.screenshot(path=str(ROOT / "docs" / "admin-screenshot.png"), full_page=False)
    page.locator("#suspect-text a.next").first.click()
    assert page.url.endswith("#suspect-2")
    page.screenshot(path=str(ARTIFACTS / "03-detail-next-passage.png"), full_page=False)

    # confirm it with a note
    page.fill("#review-form input[name=note]", "整章照搬，已取证")
    page.click("#btn-confirm")
    page.wait_for_load_state()
    assert page.locator("#match-status").inner_text() == "confirmed"
    assert "整章照搬，已取证" in page.locator("table.history").inner_text()
    page.screenshot(path=str(ARTIFACTS / "04-confirmed.png"), full_page=True)
    assert store.matches.get(sample["match_id"])["status"] == "confirmed"

    # the list shows the change; export it
    page.goto(live_url + "/matches/?status=confirmed&site=pirate.example")
    assert page.locator("table.matches tbody tr").count() == 1
    assert "confirmed" in page.locator("table.matches tbody tr").first.inner_text()
    with page.expect_download() as dl:
        page.click("#export-csv")
    path = tmp_path / "export.csv"
    dl.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    assert len(rows) == 1 and rows[0]["status"] == "confirmed"
    assert rows[0]["suspect_url"] == "http://pirate.example/book/1.html"
    assert sample["source_text"][100:150] in rows[0]["passages"]
    page.goto(live_url + "/matches/?status=new&site=pirate.example")
    assert page.locator("table.matches tbody tr").count() == 1  # only the other one is still new
    page.screenshot(path=str(ARTIFACTS / "05-list-after.png"), full_page=True)
    page.goto(live_url + "/")
    page.screenshot(path=str(ARTIFACTS / "06-dashboard.png"), full_page=True)
    assert page.locator("svg.chart rect").count() > 0
    assert page.dialogs == []


def test_hostile_page_runs_no_script(live_url, browser_page, store, reviewer, sample):
    page = browser_page
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    log_in(page, live_url, f"/matches/{sample['xss_id']}")
    for path in (f"/matches/{sample['xss_id']}", "/matches/", "/duplicates/", "/", "/sources/"):
        page.goto(live_url + path)
        page.wait_for_load_state("load")
        assert page.evaluate("typeof window.__xss") == "undefined", path
        assert page.locator("a[href^='javascript' i]").count() == 0, path
        assert page.locator("img[src=x]").count() == 0, path
    page.goto(live_url + f"/matches/{sample['xss_id']}")
    body = page.locator("main").inner_text()
    assert "<script>window.__xss=1</script>" in body  # shown as text
    assert page.locator(".unsafe-url").inner_text() == "javascript:window.__xss=4"
    page.screenshot(path=str(ARTIFACTS / "07-xss.png"), full_page=True)
    assert page.dialogs == []
