"""Soak: a long crawl of a generated local site, pages/s and the crawler's RSS over time, and a plot.

    python -m benchmarks.bench_soak [--pages 10000] [--jobdir] [--out benchmarks/results/soak.png]

Serves --pages article pages (every fifth an exact copy of an earlier one, so dedup drops a fifth)
behind chained list pages (50 links + "next"), generated on request so the server's own memory stays
flat; crawls them with `scrapy crawl news` in a subprocess on the store (embedded servers under ./var
unless MONGO_URI / REDIS_URL; a fresh database that is dropped afterwards); samples the crawler's RSS
(/proc/PID/status VmRSS) and the article fetch count every --every seconds. Prints a table, the RSS
after 1,000 and after 10,000 pages (goal: within 1.5x) and writes the plot (matplotlib, Agg).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from html import escape
from pathlib import Path

from crawler.demo_site.server import Resource, SiteServer

PROJECT = Path(__file__).resolve().parent.parent
PER_LIST = 50
COPY_EVERY = 5
SETTINGS = {"AUTOTHROTTLE_ENABLED": "0", "DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS": "16",
            "CONCURRENT_REQUESTS_PER_DOMAIN": "16", "ROBOTSTXT_OBEY": "0", "LOG_LEVEL": "WARNING",
            "DEPTH_LIMIT": "0", "ZHDEDUP_INFRINGEMENT": "0", "LOGSTATS_INTERVAL": "60"}


def sentences() -> list[str]:
    """Sentences of the project's own demo content."""
    import re

    from crawler.demo_site.content import BOOK, STORIES

    texts = [p for s in STORIES for p in s["paragraphs"]] + [p for _, ps in BOOK["chapters"] for p in ps]
    return sorted({s for t in texts for s in re.findall(r"[^。！？]+[。！？]", t) if len(s) > 8})


class GeneratedSite(dict):
    """path -> Resource, built on request from the page number (nothing kept per page)."""

    def __init__(self, pages: int) -> None:
        super().__init__()
        self.pages = pages
        self.lists = -(-pages // PER_LIST)
        self.pool = sentences()

    def story(self, i: int) -> int:
        """The story a page carries: copies point at an earlier original."""
        if i % COPY_EVERY == COPY_EVERY - 1:
            return int(hashlib.blake2b(str(i).encode(), digest_size=4).hexdigest(), 16) % max(1, i - 1)
        return i

    def article(self, i: int) -> bytes:
        """Article i: 5 paragraphs of 3 sentences picked by a hash of its story number, plus a serial."""
        s = self.story(i)
        while s % COPY_EVERY == COPY_EVERY - 1:
            s = self.story(s)
        n = len(self.pool)
        picks = [int(hashlib.blake2b(f"{s}:{k}".encode(), digest_size=4).hexdigest(), 16) % n for k in range(15)]
        paras = [f"第{s}号报道。"] + ["".join(self.pool[p] for p in picks[k:k + 3]) for k in range(0, 15, 3)]
        body = "".join(f"<p>{escape(p)}</p>" for p in paras)
        title = f"第{s}号新闻"
        return (f'<html><head><meta charset="utf-8"><title>{title}</title></head><body>'
                f'<div class="nav"><a href="/">首页</a></div><div class="article"><h1>{title}</h1>'
                f'<div class="content">{body}</div></div><div class="footer">浸泡测试站点 第{i}页</div>'
                f'</body></html>').encode("utf-8")

    def listing(self, k: int) -> bytes:
        """List page k: its 50 articles and a link to list k+1."""
        links = "".join(f'<li><a href="/a/{i}.html">新闻{i}</a></li>'
                        for i in range(k * PER_LIST, min(self.pages, (k + 1) * PER_LIST)))
        nxt = f'<a href="/list/{k + 1}.html">下一页</a>' if k + 1 < self.lists else ""
        return f'<html><head><meta charset="utf-8"><title>列表{k}</title></head><body><ul>{links}</ul>{nxt}</body></html>'.encode()

    def get(self, path: str, default=None):  # noqa: D102 - dict protocol used by the server
        try:
            if path == "/":
                return Resource(self.listing(0))
            kind, num = path.strip("/").split("/")
            n = int(num.split(".")[0])
            if kind == "a" and 0 <= n < self.pages:
                return Resource(self.article(n))
            if kind == "list" and 0 <= n < self.lists:
                return Resource(self.listing(n))
        except ValueError:
            pass
        return default


def rss_kb(pid: int) -> int | None:
    """Resident set size of a process in kB (None once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def crawl(server: SiteServer, pages: int, every: float, jobdir: str | None, env: dict, timeout: float) -> tuple[list, dict]:
    """Run the crawl, sampling (seconds, articles fetched, RSS MB); returns samples and the report."""
    tmp = Path(tempfile.mkdtemp(prefix="soak-"))
    report = tmp / "report.json"
    settings = {**SETTINGS, "ZHDEDUP_REPORT": str(report), "ZHDEDUP_REPORT_MAX_ENTRIES": "0"}
    if jobdir:
        settings["JOBDIR"] = str(tmp / "job")
    cmd = [sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_urls={server.base('s')}/",
           "-a", "sitemaps=0"] + [x for k, v in settings.items() for x in ("-s", f"{k}={v}")]
    log = open(tmp / "crawl.log", "wb")
    proc = subprocess.Popen(cmd, cwd=PROJECT, env=env, stdout=log, stderr=subprocess.STDOUT)
    samples: list[tuple[float, int, float]] = []
    t0 = time.monotonic()
    next_print = 1000
    while proc.poll() is None:
        time.sleep(every)
        rss = rss_kb(proc.pid)
        fetched = sum(n for p, n in server.hits("s").items() if p.startswith("/a/"))
        if rss is None:
            break
        samples.append((time.monotonic() - t0, fetched, rss / 1024))
        if fetched >= next_print:
            print(f"  {fetched:>6} pages  {samples[-1][0]:7.1f} s  RSS {rss / 1024:7.1f} MB", flush=True)
            next_print += 1000
        if time.monotonic() - t0 > timeout:
            proc.kill()
            print(f"stopped after {timeout:.0f} s", file=sys.stderr)
    proc.wait()
    log.close()
    if proc.returncode != 0 or not report.exists():
        raise SystemExit(f"crawl failed (exit {proc.returncode}):\n{(tmp / 'crawl.log').read_text()[-3000:]}")
    return samples, json.loads(report.read_text(encoding="utf-8"))


def rss_at(samples: list, pages: int) -> float | None:
    """RSS (MB) of the first sample at or after `pages` fetched."""
    return next((rss for _, n, rss in samples if n >= pages), None)


def plot(samples: list, out: Path, title: str) -> None:
    """RSS against pages, and pages/s against time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s[0] for s in samples]
    n = [s[1] for s in samples]
    rss = [s[2] for s in samples]
    rate, w = [], 10
    for i in range(len(samples)):
        j = max(0, i - w)
        rate.append((n[i] - n[j]) / (t[i] - t[j]) if t[i] > t[j] else 0)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6.5))
    a1.plot(n, rss, color="tab:red")
    a1.set_xlabel("pages fetched")
    a1.set_ylabel("crawler RSS (MB)")
    a1.set_ylim(0, max(rss) * 1.2)
    a1.set_title(title)
    a1.grid(alpha=0.3)
    a2.plot(t, rate, color="tab:blue")
    a2.set_xlabel("seconds")
    a2.set_ylabel("pages/s (moving)")
    a2.grid(alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=10_000)
    ap.add_argument("--every", type=float, default=1.0, help="seconds between RSS samples")
    ap.add_argument("--jobdir", action="store_true", help="crawl with JOBDIR (disk queue + frontier journal)")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", default=str(PROJECT / "benchmarks" / "results" / "soak.png"))
    args = ap.parse_args(argv)
    from storage import StoreConfig, open_store
    from storage import servers as srv

    db = f"soak_{uuid.uuid4().hex[:8]}"
    config = StoreConfig.from_env(db_name=db, key_prefix=f"{db}:")
    was = {n: srv.info(config.var_path, n).running for n in ("redis", "mongo")}
    env = {**os.environ, "ZHDEDUP_DB": db, "ZHDEDUP_PREFIX": f"{db}:",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")]))}
    site = GeneratedSite(args.pages)
    server = SiteServer({"s": site}).start()
    print(f"soak: {args.pages} article pages ({args.pages // COPY_EVERY} exact copies) + {site.lists} list pages"
          f"{' with JOBDIR' if args.jobdir else ''}", flush=True)
    try:
        samples, report = crawl(server, args.pages, args.every, None if not args.jobdir else "job", env, args.timeout)
    finally:
        server.stop()
        with open_store(config) as store:
            store.drop_all()
        started = tuple(n for n, running in was.items() if not running and not (config.mongo_uri and config.redis_url))
        if started:
            srv.stop(config.var_path, started)
    counts = report["counts"]
    elapsed = report["elapsed_seconds"]
    print(f"fetched {report['responses']} responses in {elapsed:.0f} s: {report['responses'] / elapsed:.1f} pages/s; "
          f"stored {counts.get('stored', 0)}, exact dups {counts.get('dropped/exact', 0)}, "
          f"near dups {counts.get('dropped/near', 0)}")
    r1, r10 = rss_at(samples, 1000), rss_at(samples, min(10_000, args.pages))
    peak = max(s[2] for s in samples)
    if r1 and r10:
        verdict = "OK" if r10 <= 1.5 * r1 else "OVER the 1.5x goal"
        print(f"RSS after 1,000 pages {r1:.1f} MB; after {min(10_000, args.pages):,} pages {r10:.1f} MB "
              f"({r10 / r1:.2f}x, goal <= 1.5x: {verdict}); peak {peak:.1f} MB")
    plot(samples, Path(args.out), f"soak: {args.pages:,} pages, {report['responses'] / elapsed:.0f} pages/s")
    print(f"plot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
