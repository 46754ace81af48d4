"""`python -m crawler demo` and `python -m crawler serve-demo`.

demo        serve the bundled demo sites on 127.0.0.1, crawl them with both spiders on the store
            (embedded servers under ./var unless MONGO_URI / REDIS_URL are set), print what was kept
            and what was dropped as a duplicate of what.
serve-demo  only serve the demo sites (Ctrl-C to stop), to crawl them yourself.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crawler import watch
from crawler.demo_site.server import SiteServer
from crawler.demo_site.sites import NAMES, SITES, START
from fingerprint.cliparser import OneLineParser

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Loopback crawls need no politeness delay; everything else stays as in settings.py.
FAST_LOCAL = {"AUTOTHROTTLE_ENABLED": "0", "DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS_PER_DOMAIN": "8",
              "ROBOTSTXT_OBEY": "1"}


def scrapy_crawl(spider: str, args: dict[str, str], settings: dict[str, str], env: dict | None = None,
                 timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `scrapy crawl` in a subprocess from the project root (the way a user runs it)."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", spider]
    for key, value in args.items():
        cmd += ["-a", f"{key}={value}"]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    full_env = {**os.environ, **(env or {})}
    # the crawl runs from the project root but must use the caller's var/ (the demo's sources are there)
    full_env["ZHDEDUP_VAR"] = str(Path(full_env.get("ZHDEDUP_VAR", "var")).resolve())
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), full_env.get("PYTHONPATH")]))
    return subprocess.run(cmd, cwd=PROJECT_ROOT, env=full_env, capture_output=True, text=True, timeout=timeout)


def serve(port: int) -> int:
    """Serve the demo sites until Ctrl-C."""
    server = SiteServer(SITES, port=port).start()
    for key in SITES:
        print(f"  {NAMES[key]:<26} {server.base(key)}{START[key]}")
    print("crawl them, for example:\n"
          f"  scrapy crawl news -a start_urls={server.base('a')}/\n"
          f"  scrapy crawl fiction -a toc={server.base('c')}{START['c']}\nCtrl-C stops the server.")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def print_report(title: str, report: dict) -> None:
    """What one crawl kept and dropped, readably."""
    counts = report.get("counts", {})
    print(f"\n== {title}: fetched {counts.get('fetched', 0)}, stored {counts.get('stored', 0)}, "
          f"exact dups {counts.get('dropped/exact', 0)}, "
          f"near dups {sum(counts.get(f'dropped/{k}', 0) for k in ('near', 'passages', 'rewrite'))}, "
          f"matched {counts.get('matched', 0)}")
    for page in sorted(report.get("kept", []), key=lambda p: (p.get("chapter_number") or 0, p["url"])):
        label = page.get("title") or ""
        if page.get("chapter_number"):
            label = f"{page.get('book')} #{page['chapter_number']} {page.get('chapter_title') or label}"
        print(f"  KEPT     {page['url']}  {label}")
        for match in page.get("matches") or []:
            print(f"           copies source {match['source_id']} (score {match['score']:.2f})")
    for drop in sorted(report.get("dropped", []), key=lambda d: d.get("url") or ""):
        if drop.get("kind"):
            print(f"  DROPPED  {drop['url']}\n           {drop['reason']}")
            for match in drop.get("matches") or []:
                print(f"           copies source {match['source_id']} (score {match['score']:.2f})")
        else:
            print(f"  FAILED   {drop['url']}  {drop['reason']}")
    for reason, n in sorted(report.get("failed", {}).items()):
        print(f"  failures: {reason} x{n}")


def register_novel(base_url: str) -> str:
    """The rights holder registers the demo novel's chapters in the source library (for matching)."""
    from crawler.demo_site.content import BOOK
    from storage import StoreConfig, open_store
    from storage.sources import SourceLibrary

    store = open_store(StoreConfig.from_env())
    try:
        library = SourceLibrary(store)
        for i, (title, paragraphs) in enumerate(BOOK["chapters"], 1):
            library.register(f"demo-dengta-{i:02d}", f"{BOOK['title']} {title}", "\n".join(paragraphs),
                             author=BOOK["author"], url=f"{base_url}/book/7/{i}.html")
    finally:
        store.close()
    return f"registered {len(BOOK['chapters'])} chapters of 《{BOOK['title']}》 as sources"


def demo(port: int, keep_serving: bool) -> int:
    """Serve the demo sites, crawl news (A then B) and fiction (C then D), print the outcome."""
    server = SiteServer(SITES, port=port).start()
    print("demo sites:", ", ".join(f"{NAMES[k]} {server.base(k)}" for k in SITES))
    runs = [("news", {"start_urls": server.base("a") + START["a"]}, "site A, the original news"),
            ("news", {"start_urls": server.base("b") + START["b"]}, "site B, the reprints"),
            ("fiction", {"toc": server.base("c") + START["c"]}, "site C, the novel"),
            ("fiction", {"toc": server.base("d") + START["d"]}, "site D, the pirate copy")]
    status = 0
    try:
        with tempfile.TemporaryDirectory(prefix="zhdedup-demo-") as tmp:
            for i, (spider, args, title) in enumerate(runs):
                if i == 3:
                    print("\nthe novel's rights holder registers it in the source library: "
                          + register_novel(server.base("c")))
                report = Path(tmp) / f"report-{i}.json"
                settings = {**FAST_LOCAL, "ZHDEDUP_REPORT": str(report), "LOG_LEVEL": "WARNING"}
                shown = " ".join(f"-a {k}={v}" for k, v in args.items())
                print(f"\ncrawling {title}: scrapy crawl {spider} {shown}", flush=True)
                proc = scrapy_crawl(spider, args, settings)
                if proc.returncode != 0 or not report.exists():
                    print(f"crawl failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}", file=sys.stderr)
                    status = 1
                    continue
                print_report(title, json.loads(report.read_text(encoding="utf-8")))
        if keep_serving:
            print("\nstill serving the demo sites; Ctrl-C to stop")
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    print("\nsee the stored pages and duplicate groups in the admin (zhdedup serve) "
          "or with `zhdedup status`; `zhdedup stop` stops the embedded servers.")
    return status


def first_port(value: str) -> int:
    """argparse type for --port: 0 (any free ports) or a first port that leaves room for four sites."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= port <= 65532:
        raise argparse.ArgumentTypeError(f"{port}: give 0 (any free ports) or 1..65532 (the sites use port..port+3)")
    return port


def main(argv: list[str] | None = None, prog: str = "python -m crawler") -> int:
    """Command line entry point."""
    parser = OneLineParser(prog=prog, description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="serve the demo sites, crawl them with both spiders, print the result")
    p_demo.add_argument("--port", type=first_port, default=8765, help="first port (sites use port..port+3); 0 = any")
    p_demo.add_argument("--serve", action="store_true", help="keep serving the sites after the crawl")
    p_serve = sub.add_parser("serve-demo", help="serve the demo sites on 127.0.0.1 until Ctrl-C")
    p_serve.add_argument("--port", type=first_port, default=8765, help="first port (sites use port..port+3)")
    watch.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "watch":
        return watch.run(args)
    try:
        if args.command == "serve-demo":
            return serve(args.port)
        return demo(args.port, args.serve)
    except OSError as exc:
        if exc.errno in (98, 48):  # address in use (Linux, macOS)
            print(f"cannot serve the demo sites on ports {args.port}..{args.port + 3}: {exc.strerror}; "
                  "pick others with --port N (or --port 0 for any free ports)", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
