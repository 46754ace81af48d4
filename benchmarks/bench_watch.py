"""Time to detection: how soon `python -m crawler watch` records a match for a pirated chapter.

    python -m benchmarks.bench_watch [--every 15] [--trials 3]      # --trials 20 for the p95 goal

Serves a loopback pirate site (ETag + Last-Modified, answers conditional GETs with 304) whose table of
contents gains, at a random moment, a chapter copying a work registered in the source library. Runs
`python -m crawler watch --every N TOC` (the command users run) on a fresh store and measures, per trial,
the seconds from publishing the chapter to its match appearing in MongoDB. Goal: p95 <= 30 s with
--every 15. Also prints the requests per round (unchanged site: conditional, answered 304) next to the
baseline from the same run: the requests of a re-crawl (`scrapy crawl fiction`) of the same site.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from email.utils import formatdate
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from crawler.demo_site.content import BOOK, STORIES

PROJECT_ROOT = Path(__file__).resolve().parent.parent
GOAL_P95 = 30.0
LOCAL = ["AUTOTHROTTLE_ENABLED=0", "DOWNLOAD_DELAY=0", "ROBOTSTXT_OBEY=0", "LOG_LEVEL=INFO",
         "CONCURRENT_REQUESTS_PER_DOMAIN=8"]


@dataclass
class Hit:
    """One request the site answered."""

    at: float
    path: str
    status: int
    conditional: bool


@dataclass
class PirateSite:
    """A pirate book site: a TOC at /book/ and chapters /book/N.html, with validators, on 127.0.0.1."""

    chapters: list[tuple[str, str]] = field(default_factory=list)  # (title, text)
    gone: set[str] = field(default_factory=set)
    hits: list[Hit] = field(default_factory=list)
    modified: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                site.answer(self)

            def log_message(self, *args) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    @property
    def base(self) -> str:
        """http://127.0.0.1:PORT"""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def toc_url(self) -> str:
        """The table of contents the watcher watches."""
        return self.base + "/book/"

    def chapter_url(self, n: int) -> str:
        """URL of chapter n (1-based)."""
        return f"{self.base}/book/{n}.html"

    def start(self) -> "PirateSite":
        """Serve in a daemon thread."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()

    def publish(self, title: str, text: str) -> str:
        """Add a chapter to the TOC (the TOC's validators change); returns its URL."""
        with self.lock:
            self.chapters.append((title, text))
            self.modified = time.time()
            return self.chapter_url(len(self.chapters))

    def take_down(self, n: int) -> None:
        """Chapter n answers 404 from now on."""
        with self.lock:
            self.gone.add(f"/book/{n}.html")

    def page(self, path: str) -> tuple[int, bytes, float]:
        """(status, body, last-modified time) of a path."""
        with self.lock:
            if path == "/book/":
                items = "".join(f'<dd><a href="/book/{i}.html">{escape(t)}</a></dd>'
                                for i, (t, _) in enumerate(self.chapters, 1))
                body = (f'<html><head><meta charset="utf-8"><title>灯塔守夜人最新章节_笔趣阁</title></head><body>'
                        f'<h1>灯塔守夜人</h1><dl>{items}</dl></body></html>')
                return 200, body.encode(), self.modified
            if path in self.gone or not path.startswith("/book/") or not path.endswith(".html"):
                return 404, b"<html><body><h1>404</h1></body></html>", self.modified
            try:
                title, text = self.chapters[int(path[6:-5]) - 1]
            except (ValueError, IndexError):
                return 404, b"<html><body><h1>404</h1></body></html>", self.modified
            paras = "".join(f"<p>{escape(p)}</p>" for p in text.split("\n"))
            body = (f'<html><head><meta charset="utf-8"><title>{escape(title)}_笔趣阁</title></head><body>'
                    f'<h1>{escape(title)}</h1><div id="content">{paras}</div></body></html>')
            return 200, body.encode(), self.modified

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        """200 with ETag/Last-Modified, or 304 when If-None-Match / If-Modified-Since still hold."""
        path = handler.path.split("?", 1)[0]
        status, body, modified = self.page(path)
        etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
        last_modified = formatdate(math.floor(modified), usegmt=True)
        inm, ims = handler.headers.get("If-None-Match"), handler.headers.get("If-Modified-Since")
        if status == 200 and (inm == etag or (inm is None and ims == last_modified)):
            status, body = 304, b""
        with self.lock:
            self.hits.append(Hit(time.time(), path, status, bool(inm or ims)))
        handler.send_response(status)
        if status in (200, 304):
            handler.send_header("ETag", etag)
            handler.send_header("Last-Modified", last_modified)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


def filler(n: int) -> tuple[str, str]:
    """An unregistered chapter (a demo news story), so only the planted chapters match."""
    story = STORIES[n % len(STORIES)]
    return f"第{n + 1}章 {story['title']}", "\n".join(story["paragraphs"])


def store_env(tag: str, var: str) -> dict[str, str]:
    """Environment for a fresh database and key prefix on the configured (or embedded) servers."""
    return {**os.environ, "ZHDEDUP_DB": f"bench_watch_{tag}", "ZHDEDUP_PREFIX": f"bw{tag}:", "ZHDEDUP_VAR": var,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}


def open_bench_store(env: dict[str, str]):
    """The store the watcher writes to, opened from the same environment."""
    from storage import StoreConfig, open_store

    saved = {k: os.environ.get(k) for k in ("ZHDEDUP_DB", "ZHDEDUP_PREFIX", "ZHDEDUP_VAR")}
    os.environ.update({k: env[k] for k in saved})
    try:
        return open_store(StoreConfig.from_env())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def register_works(store) -> list[tuple[str, str, str]]:
    """Register the demo novel's chapters as the rights holder's works; (source_id, title, text) each."""
    from storage.sources import SourceLibrary

    library, works = SourceLibrary(store), []
    for i, (title, paragraphs) in enumerate(BOOK["chapters"], 1):
        sid, text = f"bench-dengta-{i:02d}", "\n".join(paragraphs)
        library.register(sid, f"{BOOK['title']} {title}", text, author=BOOK["author"])
        works.append((sid, title, text))
    return works


def wait_for(check, timeout: float, step: float = 0.1):
    """Poll check() until it returns something truthy or timeout seconds pass (then None)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(step)
    return None


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ranked = sorted(values)
    return ranked[max(0, math.ceil(q / 100 * len(ranked)) - 1)]


def recrawl_requests(site: PirateSite, env: dict[str, str]) -> int:
    """Baseline: requests of one `scrapy crawl fiction` of the same site (what a re-crawl per round costs)."""
    before = len(site.hits)
    cmd = [sys.executable, "-m", "scrapy", "crawl", "fiction", "-a", f"toc={site.toc_url}"]
    for s in LOCAL:
        cmd += ["-s", s]
    subprocess.run(cmd + ["-s", "LOG_LEVEL=WARNING"], cwd=PROJECT_ROOT, env=env, capture_output=True, timeout=300)
    return len(site.hits) - before


def main(argv: list[str] | None = None) -> int:
    """Run the trials and print the time to detection and the requests per round."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_watch", description=__doc__.split("\n")[0])
    ap.add_argument("--every", type=float, default=15.0, help="watch interval in seconds (default 15)")
    ap.add_argument("--trials", type=int, default=3, help="chapters published, one per trial (20 for the goal)")
    ap.add_argument("--initial", type=int, default=5, help="chapters on the TOC before the watch starts")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds a trial waits for its match")
    args = ap.parse_args(argv)
    if args.every <= 0 or args.trials < 1:
        print("error: --every must be > 0 and --trials >= 1", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        env = store_env(tag, os.environ.get("ZHDEDUP_VAR") or str(Path(tmp) / "var"))
        store = open_bench_store(env)
        site = PirateSite().start()
        log = Path(tmp) / "watch.log"
        proc = None
        try:
            works = register_works(store)
            for n in range(args.initial):
                site.publish(*filler(n))
            cmd = [sys.executable, "-m", "crawler", "watch", "--every", str(args.every), site.toc_url]
            for s in LOCAL:
                cmd += ["-s", s]
            proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
            if not wait_for(lambda: len(store.watch.known_entries(site.toc_url)) >= args.initial, 120, 0.5):
                print(f"the first round did not finish; log:\n{log.read_text()[-3000:]}", file=sys.stderr)
                return 1
            first_round = len(site.hits)
            time.sleep(args.every * 2.2)  # two unchanged rounds
            quiet = list(site.hits[first_round:])
            latencies = []
            for trial in range(args.trials):
                time.sleep(rng.uniform(0, args.every))
                sid, title, text = works[trial % len(works)]
                url = site.publish(f"第{args.initial + trial + 1}章 {title[4:] if len(title) > 4 else title}", text)
                published = time.time()
                match = wait_for(lambda: store.db.matches.find_one({"suspect_url": url}, {"created": 1}),
                                 args.timeout, 0.1)
                seconds = (match["created"].timestamp() - published) if match else float("inf")
                latencies.append(seconds)
                print(f"trial {trial + 1:>2}: {url} matched after {seconds:.1f} s", flush=True)
            baseline = recrawl_requests(site, env)
        finally:
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            site.stop()
            store.drop_all()
            store.close()
        rounds = max(1, sum(1 for h in quiet if h.path == "/book/"))  # one TOC request per round
        conditional = sum(1 for h in quiet if h.conditional)
        not_modified = sum(1 for h in quiet if h.status == 304)
        found = [s for s in latencies if math.isfinite(s)]
        p95 = percentile(latencies, 95)
        print(f"\nwatch --every {args.every:g}, {args.trials} trial(s): detected {len(found)}/{args.trials}; "
              f"median {percentile(latencies, 50):.1f} s, p95 {p95:.1f} s, max {max(latencies):.1f} s "
              f"(goal p95 <= {GOAL_P95:.0f} s: {'met' if p95 <= GOAL_P95 else 'NOT met'})")
        print(f"unchanged site: {len(quiet)} requests over ~{rounds} round(s) = {len(quiet) / rounds:.1f} per round, "
              f"{conditional} conditional, {not_modified} answered 304")
        print(f"baseline, same run: a re-crawl of the site (scrapy crawl fiction) = {baseline} requests per round")
        return 0 if p95 <= GOAL_P95 else 1


if __name__ == "__main__":
    sys.exit(main())
