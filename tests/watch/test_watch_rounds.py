"""Watch rounds over the loopback pirate site: an unchanged site costs one conditional request answered
304 (also after a restart), a new chapter is the only page fetched, and its match is recorded."""
from __future__ import annotations

import pytest

from benchmarks.bench_watch import filler, register_works

pytestmark = pytest.mark.timeout(300)


def test_unchanged_site_gets_only_conditional_requests_and_304s(store, watcher, pirate):
    """Round 1 fetches the TOC and its chapters; round 2 (same process) and round 3 (a restarted
    watcher, validators from MongoDB) each send one request, conditional, answered 304."""
    for n in range(3):
        pirate.publish(*filler(n))
    watcher("--every", "1", "--rounds", "2", pirate.toc_url)
    first = pirate.hits[:4]
    assert sorted(h.path for h in first) == ["/book/", "/book/1.html", "/book/2.html", "/book/3.html"]
    assert [(h.status, h.conditional) for h in first] == [(200, False)] * 4
    later = pirate.hits[4:]
    assert [(h.path, h.status, h.conditional) for h in later] == [("/book/", 304, True)]
    assert len(store.watch.known_entries(pirate.toc_url)) == 3

    before = len(pirate.hits)
    run = watcher("--rounds", "1", pirate.toc_url)
    assert [(h.path, h.status, h.conditional) for h in pirate.hits[before:]] == [("/book/", 304, True)]
    assert "zhdedup/watch/not_modified" in run.log
    watch = store.watch.get(pirate.toc_url)
    assert watch["rounds"] == 3 and watch["last_outcome"]["status"] == 304


def test_new_chapter_alone_is_fetched_and_matched(store, watcher, pirate):
    """After the TOC gains a chapter copying a registered work, a round fetches the TOC and that chapter
    only, and the match is in MongoDB, announced as a WARNING."""
    works = register_works(store)
    for n in range(2):
        pirate.publish(*filler(n))
    watcher("--rounds", "1", pirate.toc_url)
    assert store.db.matches.count_documents({}) == 0
    sid, title, text = works[1]
    url = pirate.publish("第3章 " + title, text)
    before = len(pirate.hits)
    run = watcher("--rounds", "1", pirate.toc_url)
    assert sorted((h.path, h.status) for h in pirate.hits[before:]) == [("/book/", 200), ("/book/3.html", 200)]
    assert pirate.hits[before].conditional
    match = store.db.matches.find_one({"suspect_url": url})
    assert match and match["source_id"] == sid and match["score"] > 0.8
    assert f"NEW MATCH {url} copies source {sid}" in run.log


def test_watch_list_survives_and_bad_arguments_exit_2(store, watcher, pirate):
    """URLs given once stay watched; a watcher started without URLs watches the stored list. A bad
    URL or interval is one line on stderr and exit code 2."""
    import subprocess
    import sys

    pirate.publish(*filler(0))
    store.watch.add(pirate.toc_url, interval=60)
    watcher("--rounds", "1")
    assert store.watch.get(pirate.toc_url)["rounds"] == 1
    for bad in (["ftp://x/"], ["--every", "0", pirate.toc_url], ["--profile", "nope"]):
        proc = subprocess.run([sys.executable, "-m", "crawler", "watch", *bad], env=watcher.env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_sigterm_stops_cleanly_and_the_next_start_resumes(store, watcher, pirate):
    """SIGTERM between rounds: Scrapy's clean shutdown (exit 0, run recorded); a new watcher resumes with
    the stored validators, so its first round is a 304."""
    import signal
    import subprocess
    import sys
    import time

    from benchmarks.bench_watch import LOCAL, wait_for

    pirate.publish(*filler(0))
    cmd = [sys.executable, "-m", "crawler", "watch", "--every", "60", pirate.toc_url]
    for s in LOCAL:
        cmd += ["-s", s]
    proc = subprocess.Popen(cmd, env=watcher.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_for(lambda: store.watch.known_entries(pirate.toc_url), 60, 0.2)
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        log, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "'finish_reason': 'shutdown'" in log
    run = store.runs.recent(1)[0]
    assert run["spider"] == "watch" and run["finished"] is not None
    before = len(pirate.hits)
    watcher("--rounds", "1", pirate.toc_url)
    assert [(h.path, h.status) for h in pirate.hits[before:]] == [("/book/", 304)]
