"""CLI: ``python -m extract PAGE.html [--url URL] [--json] [--selector SEL]`` prints a saved page's body."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from extract.article import NotArticle, extract
from fingerprint.cliparser import OneLineParser


def main(argv: list[str] | None = None, prog: str = "python -m extract") -> int:
    """Print the body of a saved page (or JSON with title, text, date, author); exit 2 when it has none."""
    ap = OneLineParser(prog=prog, description="Article body of a saved Chinese news or novel page.")
    ap.add_argument("file", type=Path, help="a saved HTML page (any encoding: declared, sniffed or guessed)")
    ap.add_argument("--url", default="", help="the page's URL (helps with relative links and site rules)")
    ap.add_argument("--json", action="store_true", help="print title, text, date, author as JSON")
    ap.add_argument("--selector", help="body selector (CSS or XPath) as a site profile would give it")
    args = ap.parse_args(argv)
    profile = {"body_selector": args.selector} if args.selector else None
    try:
        raw = args.file.read_bytes()
    except OSError as exc:
        print(f"{prog}: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        result = extract(raw, url=args.url, profile=profile)
    except NotArticle as exc:
        print(f"no article body ({exc.reason}): {exc.message}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(asdict(result), ensure_ascii=False, indent=2))
    else:
        print(result.text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
