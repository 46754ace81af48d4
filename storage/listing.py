"""`python -m storage outcomes | pages | duplicates`: what the store holds, one line (or JSON object) per row."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Iterable

from .schema import OUTCOMES

COLUMNS = {
    "outcomes": ("outcome", "reason", "url", "original_url", "detail"),
    "pages": ("fetched", "site", "url", "title"),
    "duplicates": ("method", "distance", "coverage", "url", "original_url"),
}


def add_commands(sub: Any) -> None:
    """The three listing subcommands, with what each argument means."""
    o = sub.add_parser("outcomes", help="what became of every URL of a crawl run (stored, duplicate, skipped...)")
    o.add_argument("--run", help="a run id (default: the latest run; 'all' for every run)")
    o.add_argument("--outcome", choices=OUTCOMES, help="only this outcome")
    o.add_argument("--reason", help="only this reason (e.g. list_page, http_404, depth_limit)")
    o.add_argument("--url", help="only this URL: why is it (not) in the store?")
    p = sub.add_parser("pages", help="stored pages, oldest first")
    p.add_argument("--site", help="only this site (the profile name or host, as stored)")
    p.add_argument("--since", help="YYYY-MM-DD: only pages fetched since this date")
    d = sub.add_parser("duplicates", help="recorded copies, or one cluster: an original and its copies")
    d.add_argument("--of", metavar="PAGE|URL", help="the cluster of this page id, page URL or copy URL")
    for parser in (o, p, d):
        parser.add_argument("--json", action="store_true", help="one JSON object per line")
        parser.add_argument("--limit", type=int, default=0, help="at most this many rows (default: all)")


def run(store: Any, args: argparse.Namespace) -> int:
    """Print the rows of one listing command; exit 1 when a cluster asked for by --of is unknown."""
    if args.cmd == "duplicates" and args.of:
        cluster = store.cluster_of(args.of)
        if cluster is None:
            print(f"error: no page or copy known as {args.of!r}", file=sys.stderr, flush=True)
            return 1
        _print_cluster(cluster, args.json)
        return 0
    _print_rows(args.cmd, _rows(store, args), args.json)
    return 0


def _rows(store: Any, args: argparse.Namespace) -> Iterable[dict]:
    if args.cmd == "outcomes":
        run_id = args.run
        if run_id is None:
            latest = store.runs.latest()
            run_id = latest["id"] if latest else "none"
        return store.runs.find_outcomes(None if run_id == "all" else run_id, args.outcome, args.reason, args.url,
                                        args.limit)
    if args.cmd == "pages":
        return store.find_pages(args.site, args.since, args.limit)
    return store.find_duplicates(args.limit)


def _print_rows(kind: str, rows: Iterable[dict], as_json: bool) -> None:
    columns = COLUMNS[kind]
    if not as_json:
        print("\t".join(columns))
    for row in rows:
        if as_json:
            print(json.dumps({k: v for k, v in row.items() if k != "_id"}, ensure_ascii=False, default=str))
        else:
            print("\t".join(_cell(row.get(c)) for c in columns))


def _print_cluster(cluster: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(cluster, ensure_ascii=False, default=str))
        return
    o = cluster["original"]
    print(f"original\t{o['url']}\t{o.get('title') or ''}")
    print("method\tdistance\tcoverage\tcopy")
    for c in cluster["copies"]:
        print(f"{c.get('method') or ''}\t{_cell(c.get('distance'))}\t{_cell(c.get('coverage'))}\t{c['url']}")


def _cell(value: Any) -> str:
    """A table cell: '—' for what does not apply, no tabs or newlines inside."""
    if value is None or value == "":
        return "—"
    return str(value).replace("\t", " ").replace("\n", " ")
