"""Alerts: a new match above ZHDEDUP_ALERT_MIN_SCORE is a WARNING line and a JSON POST to the webhook,
retried with backoff through Scrapy's downloader; an unreachable webhook never stops the crawl."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from benchmarks.bench_watch import filler, register_works

pytestmark = pytest.mark.timeout(300)


class Hook:
    """A loopback webhook that answers 500 to its first `failures` POSTs, then 204; keeps the bodies."""

    def __init__(self, failures: int) -> None:
        self.bodies: list[dict] = []
        self.statuses: list[int] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status = 500 if len(hook.statuses) < failures else 204
                hook.statuses.append(status)
                hook.bodies.append(body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def plant(store, pirate) -> tuple[str, str]:
    """A TOC with one unregistered chapter and one copying a registered work: (chapter URL, work id)."""
    works = register_works(store)
    pirate.publish(*filler(0))
    sid, title, text = works[2]
    return pirate.publish("第2章 " + title, text), sid


def test_new_match_posts_to_webhook_with_retry(store, watcher, pirate):
    url, sid = plant(store, pirate)
    hook = Hook(failures=1)
    try:
        run = watcher("--rounds", "1", pirate.toc_url,
                      settings=[f"ZHDEDUP_ALERT_WEBHOOK={hook.url}", "ZHDEDUP_ALERT_BACKOFF=0.2"])
    finally:
        hook.close()
    assert hook.statuses == [500, 204]
    assert hook.bodies[1] == hook.bodies[0]
    assert hook.bodies[0]["suspect_url"] == url and hook.bodies[0]["source_id"] == sid
    assert hook.bodies[0]["score"] >= 0.5 and hook.bodies[0]["event"] == "new_match"
    assert f"WARNING: NEW MATCH {url}" in run.log
    assert "'zhdedup/alerts/webhook_sent': 1" in run.log and "'zhdedup/alerts/webhook_retried': 1" in run.log

    # the same match seen again (a re-added URL re-fetched) is not new: no second alert
    store.db.watch_entries.delete_many({})
    run = watcher("--rounds", "1", pirate.toc_url)
    assert "NEW MATCH" not in run.log


def test_unreachable_webhook_gives_up_with_an_error_line(store, watcher, pirate, dead_port):
    url, _ = plant(store, pirate)
    run = watcher("--rounds", "1", pirate.toc_url,
                  settings=[f"ZHDEDUP_ALERT_WEBHOOK=http://127.0.0.1:{dead_port}/hook", "ZHDEDUP_ALERT_BACKOFF=0.1",
                            "ZHDEDUP_ALERT_RETRIES=2"])
    assert f"failed 3 times" in run.log and f"alert for {url} not delivered" in run.log
    assert store.db.matches.find_one({"suspect_url": url}) is not None


def test_threshold_keeps_quiet(store, watcher, pirate):
    plant(store, pirate)
    run = watcher("--rounds", "1", pirate.toc_url, settings=["ZHDEDUP_ALERT_MIN_SCORE=1.01"])
    assert "NEW MATCH" not in run.log and store.db.matches.count_documents({}) == 1
