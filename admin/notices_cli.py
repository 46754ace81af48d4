"""`python -m admin notices SITE [--format md|html|txt]`: the takedown notice for a site's confirmed matches,
plus `--sent` to record that it went out and `--followup` to show which noticed pages were taken down."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from admin.db import open_default_store
from admin.takedown import FORMATS, LANGS, NoticeError, build_notice, render_notice


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `notices` subcommand."""
    n = sub.add_parser("notices", help="takedown notice for the confirmed matches of an infringing site")
    n.add_argument("site", help="the infringing site as stored with its matches (host[:port])")
    n.add_argument("--format", choices=FORMATS, default="md")
    n.add_argument("--lang", choices=LANGS, default="both", help="Chinese, English or both (default)")
    n.add_argument("--holder", help="rights holder's name (default: the works' registered authors)")
    n.add_argument("--contact", help="rights holder's e-mail and telephone")
    n.add_argument("--address", help="rights holder's postal address")
    n.add_argument("--out", help="write the notice to this file instead of standard output")
    n.add_argument("--sent", action="store_true", help="record that the notice has been sent")
    n.add_argument("--followup", action="store_true", help="list the site's noticed pages: taken down or up")
    n.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build (or re-print) the notice; exit 2 with one line when there is nothing to notice."""
    store = open_default_store()
    try:
        if args.followup:
            return followup(store, args.site)
        try:
            notice, created = build_notice(store, args.site, args.holder, args.contact, args.address)
        except NoticeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        text = render_notice(notice, args.format, args.lang)
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        state = "new notice" if created else f"every confirmed match is already in notice {notice['_id']} ({notice['status']})"
        print(f"{state}: {len(notice['items'])} URL(s) of {args.site}, id {notice['_id']}", file=sys.stderr)
        if args.sent:
            sent = store.notices.mark_sent(notice["_id"])
            print("recorded as sent" if sent else f"not recorded: notice {notice['_id']} was already sent",
                  file=sys.stderr)
        return 0
    finally:
        store.close()


def followup(store, site: str) -> int:
    """One line per noticed URL of the site: state, when taken down, last check."""
    rows = store.notices.takedowns(site)
    if not rows:
        print(f"error: no noticed pages for site {site!r}", file=sys.stderr)
        return 2
    for t in rows:
        gone = t["gone_at"].isoformat(timespec="seconds") if t.get("gone_at") else "-"
        checked = t["checked"].isoformat(timespec="seconds") if t.get("checked") else "never"
        print(f"{'GONE' if t['state'] == 'gone' else 'UP  '}\t{gone}\t{checked}\t{t['_id']}\t{t.get('reason') or ''}")
    return 0
