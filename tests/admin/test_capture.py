"""Rendered captures: confirming a match renders its page in real headless Chromium (Debian's chromium) on a
loopback site; the PNG and PDF are chained, timestamped by a loopback TSA, shown on the match page and
packed; a changed byte of the screenshot fails `verify` and check.py. Without Chromium it is off, saying so."""
from __future__ import annotations

import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest
from bson.binary import Binary

from admin.evidence_pack import write_pack
from storage.schema import to_oid
from storage.timestamping import load_roots
from tests.admin.conftest import csrf_from
from tests.admin.test_evidence_pack import matches_with_evidence
from tests.admin.test_browser import browser_page, live_url  # noqa: F401
from tests.tsa_fixture import tsa, tsa_pki  # noqa: F401

CHROMIUM = "/usr/bin/chromium"
PAGE = "<html><head><meta charset=utf-8><title>盗版 第二回</title></head><body><p>滚滚长江东逝水</p></body></html>"


@pytest.fixture(autouse=True)
def capture(monkeypatch: pytest.MonkeyPatch) -> bool:
    """Rendered captures on (the conftest turns them off elsewhere): the pages here are on 127.0.0.1."""
    from crawler import settings

    monkeypatch.setattr(settings, "ZHDEDUP_CAPTURE", True)
    return True


@pytest.fixture
def pirate_url() -> Iterator[str]:
    """A one-page pirate site on 127.0.0.1."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = PAGE.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/read/2.html"
    finally:
        server.shutdown()
        server.server_close()


def confirm(client, mid: str) -> str:
    token = csrf_from(client.get(f"/matches/{mid}").get_data(as_text=True))
    resp = client.post(f"/matches/{mid}/review", data={"action": "confirm", "csrf_token": token},
                       follow_redirects=True)
    assert resp.status_code == 200
    return resp.get_data(as_text=True)


@pytest.mark.browser
@pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")
def test_confirm_renders_chains_stamps_shows_and_packs(client, store, tsa, pirate_url, monkeypatch, tmp_path):
    from crawler import settings

    monkeypatch.setattr(settings, "ZHDEDUP_TSA_URL", tsa.url)
    monkeypatch.setattr(settings, "ZHDEDUP_TSA_CA", str(tsa.ca))
    mid = matches_with_evidence(store, 1)[0]
    store.db.matches.update_one({"_id": to_oid(mid)}, {"$set": {"suspect_url": pirate_url}})
    html = confirm(client, mid)
    assert "Page rendered and chained as evidence record #1" in html, html[html.find("<main"):][:1500]
    assert 'id="capture-png"' in html and "snapshot timestamped" in html and "every evidence record timestamped" in html
    png = client.get(f"/matches/{mid}/capture.png")
    assert png.status_code == 200 and png.data.startswith(b"\x89PNG") and png.mimetype == "image/png"
    assert client.get(f"/matches/{mid}/capture.pdf").data.startswith(b"%PDF")
    res = store.evidence.verify(load_roots(tsa.ca))
    assert res.ok and res.stamps.all_stamped and res.checked == 2
    write_pack(store, mid, tmp_path / "pack.zip", str(tsa.ca))
    with zipfile.ZipFile(tmp_path / "pack.zip") as zf:
        zf.extractall(tmp_path / "pack")
    check = [sys.executable, "check.py"]
    ok = subprocess.run(check, cwd=tmp_path / "pack", capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "ok   capture openssl ts -verify" in ok.stdout, ok.stdout
    shot = tmp_path / "pack" / "capture" / "screenshot.png"
    shot.write_bytes(shot.read_bytes()[:-1] + b"\x00")
    bad = subprocess.run(check, cwd=tmp_path / "pack", capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "FAIL file capture/screenshot.png" in bad.stdout
    token = csrf_from(client.get(f"/matches/{mid}").get_data(as_text=True))      # render again on demand
    again = client.post(f"/matches/{mid}/capture", data={"csrf_token": token}, follow_redirects=True)
    assert "chained as evidence record #2" in again.get_data(as_text=True) and store.matches.get(mid)["capture_seq"] == 2
    data = bytearray(store.evidence.get(1)["png"])
    data[len(data) // 2] ^= 0x01
    store.evidence.records.update_one({"_id": 1}, {"$set": {"png": Binary(bytes(data))}})
    res = store.evidence.verify(load_roots(tsa.ca))
    assert not res.ok and res.bad_seq == 1 and "screenshot" in res.problem


def test_without_chromium_capture_is_off_and_says_why(client, store, monkeypatch):
    from crawler import settings

    monkeypatch.setattr(settings, "ZHDEDUP_CHROMIUM", "/nonexistent/chromium")
    mid = matches_with_evidence(store, 1)[0]
    html = confirm(client, mid)
    assert "No rendered capture: no Chromium at /nonexistent/chromium" in html
    assert store.matches.get(mid)["status"] == "confirmed" and store.evidence.verify().ok
    assert "no rendered capture" in html and client.get(f"/matches/{mid}/capture.png").status_code == 404


@pytest.mark.browser
@pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium")
def test_screenshot_shows_on_the_match_page_in_chromium(live_url, browser_page, store, reviewer, pirate_url):
    from admin.capture import capture_match
    from tests.admin.test_browser import ARTIFACTS, log_in

    mid = matches_with_evidence(store, 1)[0]
    store.db.matches.update_one({"_id": to_oid(mid)}, {"$set": {"suspect_url": pirate_url}})
    done: list[int] = []   # Playwright's sync API runs one instance per thread: the capture gets its own
    worker = threading.Thread(target=lambda: done.append(capture_match(store, store.matches.get(mid))))
    worker.start()
    worker.join(120)
    assert done == [1]
    page = browser_page
    log_in(page, live_url, f"/matches/{mid}")
    img = page.locator("img#capture-png")
    img.wait_for(state="visible")
    page.wait_for_function("document.querySelector('img#capture-png').complete")
    assert page.evaluate("document.querySelector('img#capture-png').naturalWidth") >= 1000
    page.screenshot(path=str(ARTIFACTS / "match-capture.png"), full_page=True)
