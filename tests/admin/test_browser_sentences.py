"""Issue 27 in real headless Chromium: a rewrite's aligned sentences are side by side (each pair on one line,
the original left of the copy), the swaps are marked, and the hostile sentence runs no script.

Served by werkzeug on 127.0.0.1 like tests/admin/test_browser.py; the screenshot goes to tests/_artifacts/."""
from __future__ import annotations

import os

import pytest

from tests.admin.test_browser import ARTIFACTS, CHROMIUM, browser_page, live_url, log_in  # noqa: F401 (fixtures)
from tests.admin.test_sentences import rewrite  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]


def _box(locator) -> dict:
    box = locator.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0
    return box


def test_pairs_are_side_by_side_in_chromium(live_url, browser_page, store, reviewer, rewrite):  # noqa: F811
    page = browser_page
    log_in(page, live_url, "/duplicates/")
    page.click("a.copy-sentences")
    page.wait_for_load_state()
    assert page.url.endswith(f"/duplicates/{rewrite['dup_id']}/sentences")
    pairs = page.locator("#sentence-pairs tr.row-pair")
    assert pairs.count() == 3
    for i in range(3):
        left, right = _box(pairs.nth(i).locator("td.orig")), _box(pairs.nth(i).locator("td.copy"))
        assert left["x"] + left["width"] <= right["x"] + 1           # the original left of the copy
        assert abs(left["y"] - right["y"]) < 1                       # on one line
        assert min(left["width"], right["width"]) > 300              # both readable, neither squeezed
    syn = page.locator("#sentence-pairs tr.row-pair td.copy span.w-syn")
    assert "游人" in syn.all_inner_texts()
    assert page.locator("span.w-add").first.evaluate("e => getComputedStyle(e).backgroundColor") != \
        syn.first.evaluate("e => getComputedStyle(e).backgroundColor")   # two kinds of marks look different
    added = page.locator("#sentence-pairs tr.row-added td.copy")
    assert "<script>window.__xss=27</script>" in added.inner_text()   # shown as text
    assert page.evaluate("typeof window.__xss") == "undefined" and page.locator("img[src=x]").count() == 0
    assert page.locator("#share-smaller").inner_text() == "75.0%"
    page.screenshot(path=str(ARTIFACTS / "27-sentences.png"), full_page=True)
    page.goto(f"{live_url}/matches/{rewrite['match_id']}")
    page.click("#sentences-link")
    page.wait_for_load_state()
    assert page.locator("#sentence-pairs tr.row-pair").count() == 3 and page.dialogs == []
