"""End-to-end evidence with a real TSA on loopback: `scrapy crawl` finds pirate chapters and the TSA is
stopped mid-crawl, after its first token and before the last chapter is served (nothing lost, the chain
goes on, the crawl says so); in the next crawl the TSA is back but answers garbage, then recovers while
the crawl runs, and the stamper's retry catches the stamps up. Every token verifies with
plain `openssl ts -verify`, and `python -m admin evidence verify` and the exported packs' check.py agree."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from crawler.demo_site.content import BOOK
from storage.sources import SourceLibrary
from tests.crawler.conftest import duplicates, stored_urls
from tests.tsa_fixture import LoopbackTSA, openssl_verify, tsa_pki  # noqa: F401

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[2]


def chapter_url(base: str, root: str, n: int) -> str:
    return f"{base}{root}{100 + n}.html"


@pytest.fixture(scope="module")
def crawled(module_store, sites, tsa_pki):
    """Crawl the novel (no TSA), register its chapters, crawl the pirate copy with the TSA stopped, then
    crawl the novel again with the TSA back."""
    store, crawl = module_store
    tsa = LoopbackTSA(tsa_pki).start()
    plain = crawl("fiction", toc=sites.base("z") + "/book/1/")
    for n, (title, paragraphs) in enumerate(BOOK["chapters"][:3], start=1):
        SourceLibrary(store).register(f"dengta-{n}", title, "\n".join(paragraphs))
    tsa_settings = {"ZHDEDUP_TSA_URL": tsa.url, "ZHDEDUP_TSA_CA": str(tsa.ca)}
    last = sites.servers["p"].site["/read/9/103.html"]
    served = last.body

    def stop_tsa_then_serve() -> bytes:
        """The last chapter waits for the TSA's first token, then the TSA goes down, then it is served."""
        tsa.stamped.wait(120)
        tsa.stop()
        return served

    last.body = stop_tsa_then_serve
    try:
        down = crawl("fiction", settings=tsa_settings, toc=sites.base("p") + "/read/9/")
    finally:
        last.body = served
    status_down = store.evidence.stamp_status()
    tsa.mode = "garbage"                            # back, but answering garbage until the first chapter is asked
    tsa.answered.clear()
    tsa.start()
    first = sites.servers["z"].site["/book/1/101.html"]
    chapter = first.body
    once = threading.Lock()

    def tsa_recovers_then_serve() -> bytes:
        """The first fetch of chapter 1 waits for a refused (garbage) answer, the TSA recovers, and a token
        is taken on the stamper's retry; later fetches (the rendered capture) are served at once."""
        if once.acquire(blocking=False):
            tsa.answered.wait(120)
            tsa.stamped.clear()
            tsa.mode = "ok"
            tsa.stamped.wait(120)
        return chapter

    first.body = tsa_recovers_then_serve
    try:
        back = crawl("fiction", settings={**tsa_settings, "ZHDEDUP_CAPTURE_AT_MATCH": "1"},
                     toc=sites.base("z") + "/book/1/")
    finally:
        first.body = chapter
    try:
        yield store, crawl, tsa, plain, down, status_down, back
    finally:
        tsa.stop()


def test_tsa_down_loses_no_page_and_no_evidence(crawled, sites):
    store, _, _, plain, down, status_down, _ = crawled
    assert "Disabled crawler.stamps.EvidenceStamper: ZHDEDUP_TSA_URL is not set" in plain.log
    z_base, p_base = sites.base("z"), sites.base("p")
    assert set(duplicates(store)) == {chapter_url(p_base, "/read/9/", n) for n in (1, 2, 3)}
    assert stored_urls(store) == {chapter_url(z_base, "/book/1/", n) for n in (1, 2, 3)}
    pirate = [m for m in store.db.matches.find({}) if m["suspect_url"].startswith(p_base)]
    assert len(pirate) == 3 and all(isinstance(m.get("evidence_seq"), int) for m in pirate)
    assert down.counts.get("evidence_missing", 0) == 0 and down.counts["evidence/stamp_failures"] >= 1
    assert "evidence head left unstamped at close" in down.log
    assert down.counts["evidence/stamps"] >= 1                 # stamped while the TSA was up ...
    assert status_down.stamped_to is not None and not status_down.all_stamped   # ... not after it stopped
    assert status_down.records == 3 and status_down.unstamped_since and "did not answer" in status_down.last_error


def test_stamps_catch_up_and_verify_with_plain_openssl(crawled, tmp_path):
    store, crawl, tsa, *_, back = crawled
    # within the crawl: a refused token, a retry after backoff, caught up while the crawl still ran
    assert back.counts["evidence/stamp_failures"] >= 1 and "not a timestamp response" in back.log
    assert "evidence timestamps caught up" in back.log
    report = store.evidence.stamp_status()
    assert report.all_stamped and report.records >= 3 and report.last_error is None
    for stamp in store.evidence.each_stamp():
        (tmp_path / "STAMPED").write_bytes(bytes(stamp["stamped"]))
        (tmp_path / "TOKEN.tsr").write_bytes(bytes(stamp["token"]))
        r = openssl_verify(tmp_path / "STAMPED", tmp_path / "TOKEN.tsr", tsa.ca)
        assert r.returncode == 0 and "Verification: OK" in r.stdout, r.stderr
    env = {**os.environ, **crawl.env, "ZHDEDUP_TSA_CA": str(tsa.ca)}
    r = subprocess.run([sys.executable, "-m", "admin", "evidence", "verify"], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=120)
    assert r.returncode == 0 and "every evidence record timestamped" in r.stdout, r.stdout + r.stderr


def test_pack_of_a_crawled_match_has_the_exchange_and_checks(crawled, sites, tmp_path):
    store, crawl, tsa, *_ = crawled
    match = store.db.matches.find_one({"suspect_url": chapter_url(sites.base("p"), "/read/9/", 2)})
    rec = store.evidence.for_match(match)
    ex = rec["exchange"]
    assert ex["status"] == 200 and ex["ip_address"] == "127.0.0.1" and ex["port"] == int(sites.base("p").rsplit(":", 1)[1])
    assert ex["body_sha256"] == rec["raw_sha256"] and any(k.lower() == "content-type" for k, _ in ex["headers"])
    env = {**os.environ, **crawl.env, "ZHDEDUP_TSA_CA": str(tsa.ca)}
    out = tmp_path / "pack.zip"
    r = subprocess.run([sys.executable, "-m", "admin", "evidence", "export", str(match["_id"]), str(out)],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(out) as zf:
        zf.extractall(tmp_path / "pack")
    ok = subprocess.run([sys.executable, "check.py"], cwd=tmp_path / "pack", capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "ok   openssl ts -verify" in ok.stdout, ok.stdout
    stamped = tmp_path / "pack" / "timestamp"
    plain = openssl_verify(stamped / "STAMPED.bin", stamped / "TOKEN.tsr", tsa.ca)
    assert plain.returncode == 0 and "Verification: OK" in plain.stdout


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium at /usr/bin/chromium")
def test_capture_at_match_time_renders_new_matches_and_is_stamped(crawled, sites):
    store, *_, back = crawled
    z = [m for m in store.db.matches.find({}) if m["suspect_url"].startswith(sites.base("z"))]
    assert len(z) == 3 and back.counts["evidence/captures"] == 3
    for m in z:
        rec = store.evidence.capture_for(m)
        assert rec["kind"] == "capture" and bytes(rec["png"]).startswith(b"\x89PNG") and rec["final_url"] == m["suspect_url"]
    assert store.evidence.stamp_status().all_stamped and store.evidence.verify().ok
