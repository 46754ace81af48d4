"""`python -m crawler watch [--every SECONDS] [--profile NAME ...] [URL ...]`: watch pirate sites.

Adds the URLs (tables of contents, RSS/Atom feeds, sitemaps, list pages) and profiles to the watch list
stored in MongoDB, then runs the `watch` spider (crawler/spiders/watch.py) in this process until Ctrl-C
or SIGTERM. Without arguments it watches what the list already holds (the admin's Watch page edits it).
"""
from __future__ import annotations

import argparse
import sys
from urllib.parse import urlsplit

from crawler.siteprofiles import ProfileError, load_profiles


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `watch` subcommand's arguments."""
    p = sub.add_parser("watch", help="re-visit watched sites on a schedule, catch new chapters, follow takedowns")
    p.add_argument("urls", nargs="*", metavar="URL", help="TOC, feed, sitemap or list page to add to the watch list")
    p.add_argument("--every", type=float, default=None, metavar="SECONDS",
                   help="seconds between rounds for the URLs given here (default ZHDEDUP_WATCH_EVERY, 300)")
    p.add_argument("--profile", action="append", default=[], metavar="NAME",
                   help="watch a book or site profile of crawler/profiles/ (repeatable)")
    p.add_argument("--rounds", type=int, default=0, help="stop after N rounds of every watched URL (0: never)")
    p.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                   help="Scrapy setting for this run, as with scrapy crawl -s (repeatable)")


def check_args(args: argparse.Namespace) -> str | None:
    """A one-line complaint about the command line, or None when it is usable."""
    for url in args.urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return f"not an http(s) URL: {url!r}"
    if args.every is not None and args.every <= 0:
        return f"--every must be a positive number of seconds, not {args.every:g}"
    if args.rounds < 0:
        return "--rounds must be 0 (never stop) or more"
    for item in args.set:
        if "=" not in item:
            return f"--set needs NAME=VALUE, not {item!r}"
    known = {p.name for key in ("book", "site") for p in load_profiles(key)}
    missing = [n for n in args.profile if n not in known]
    if missing:
        return f"unknown profile(s) {missing}; known: {sorted(known)}"
    return None


def run(args: argparse.Namespace) -> int:
    """Run the watch spider in this process until it is stopped (or has done --rounds rounds)."""
    try:
        problem = check_args(args)
    except ProfileError as exc:
        problem = str(exc)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from scrapy.crawler import CrawlerProcess

    from crawler.commands.crawl import catch_cannot_start
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("crawler.settings", priority="project")
    for item in args.set:
        name, _, value = item.partition("=")
        settings.set(name.strip(), value, priority="cmdline")
    process = CrawlerProcess(settings)
    spider_args = {"urls": ",".join(args.urls), "profiles": ",".join(args.profile), "rounds": args.rounds}
    if args.every is not None:
        spider_args["every"] = args.every
    cannot_start = catch_cannot_start(process.crawl("watch", **spider_args))
    process.start()
    return 2 if cannot_start else 0
