"""`python -m admin ...`: serve the admin, manage users, the source library, and list matches."""
from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from typing import Sequence

from admin import notices_cli
from admin.db import open_default_store
from admin.queries import STATUSES, MatchQuery
from fingerprint.cliparser import OneLineParser


def _serve(args: argparse.Namespace) -> int:
    from admin import create_app

    app = create_app()
    banner = f"zhdedup admin on http://{args.host}:{args.port}/"
    if args.debug:   # Werkzeug's development server reports a taken address itself
        print(banner, file=sys.stderr)
        app.run(host=args.host, port=args.port, debug=True, threaded=True)
        return 0
    import logging

    import waitress

    logging.basicConfig()   # as waitress.serve does: its warnings (a full task queue) reach stderr
    try:
        server = waitress.create_server(app, host=args.host, port=args.port, threads=8, ident="zhdedup")
    except OSError as exc:   # the address: in use, not this machine's, or a port below 1024
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; choose another with "
              "--host/--port", file=sys.stderr)
        return 2
    print(banner, file=sys.stderr)
    server.run()
    return 0


def _users(args: argparse.Namespace) -> int:
    from admin.auth import add_user

    store = open_default_store()
    if args.users_cmd == "list":
        for name in store.users.names():
            print(name)
        return 0
    if args.users_cmd == "remove":
        if not store.users.remove(args.name):
            print(f"error: no user {args.name!r}", file=sys.stderr)
            return 2
        print(f"user {args.name} removed; its sessions are ended")
        return 0
    password = _read_password(args.name, args.password_stdin)
    if password is None:
        return 2
    try:
        add_user(store, args.name, password)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"user {args.name} saved")
    return 0


def _read_password(name: str, from_stdin: bool) -> str | None:
    """The new password from stdin or typed twice; None (after one line saying why) when there is none."""
    try:
        if from_stdin:
            line = sys.stdin.readline()
            if not line:
                print("error: no password on standard input (pipe one line: echo PASSWORD | ... --password-stdin)",
                      file=sys.stderr)
                return None
            return line.rstrip("\r\n")
        password = getpass.getpass(f"Password for {name}: ")
        if password != getpass.getpass("Repeat password: "):
            print("error: passwords differ", file=sys.stderr)
            return None
        return password
    except EOFError:
        print("error: no password typed (standard input is closed); type it at a terminal, "
              "or pipe it with --password-stdin", file=sys.stderr)
        return None


def _sources(args: argparse.Namespace) -> int:
    from admin.source_import import SourceError, load_paths, register_works

    store = open_default_store()
    if args.sources_cmd == "add":
        try:
            results = register_works(store, load_paths(args.paths))
        except SourceError as exc:
            print(f"error: nothing added: {exc}", file=sys.stderr)
            return 2
        for sid, title, new in results:
            print(f"{'added' if new else 'already registered'}\t{sid}\t{title}")
        added = sum(1 for _, _, new in results if new)
        print(f"{added} added, {len(results) - added} already registered")
        return 0
    if args.sources_cmd == "remove":
        if not store.sources.get(args.id):
            print(f"error: no source with id {args.id!r}", file=sys.stderr)
            return 1
        store.sources.remove(args.id)
        print(f"removed {args.id}")
        return 0
    for s in store.sources.all():
        print(f"{s.get('_id', s.get('id'))}\t{s.get('title', '')}\t{s.get('author') or ''}")
    return 0


def _matches(args: argparse.Namespace) -> int:
    store = open_default_store()
    mq = MatchQuery(status=args.status or "", per_page=min(args.limit, 500))
    fields = ("suspect_url", "site", "title", "source_id", "score", "status", "created")
    if not args.json:
        print("id\tstatus\tscore\tsource_id\tsuspect_url")
    for m in store.matches.each(mq, limit=args.limit):
        row = {k: m.get(k) for k in fields}
        row["id"] = str(m["_id"])
        row["created"] = row["created"].isoformat() if hasattr(row["created"], "isoformat") else row["created"]
        if args.json:
            row["suspect_spans"], row["source_spans"] = m.get("suspect_spans"), m.get("source_spans")
            print(json.dumps(row, ensure_ascii=False))
        else:
            score = f"{row['score']:.3f}" if isinstance(row["score"], (int, float)) else "-"
            print(f"{row['id']}\t{row['status']}\t{score}\t{row['source_id']}\t{row['suspect_url']}")
    return 0


def build_parser(prog: str = "python -m admin") -> argparse.ArgumentParser:
    """The argparse tree for `python -m admin` (prog: the name usage lines show)."""
    p = OneLineParser(prog=prog, description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run the admin web server")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=int, default=5000, help="port to listen on (default 5000)")
    s.add_argument("--debug", action="store_true", help="Werkzeug's development server with the debugger (never in production)")
    s.set_defaults(func=_serve)
    u = sub.add_parser("users", help="manage reviewer accounts")
    usub = u.add_subparsers(dest="users_cmd", required=True)
    ua = usub.add_parser("add", help="create a user or reset its password")
    ua.add_argument("name", help="the login name")
    ua.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    usub.add_parser("list", help="print every user name")
    ur = usub.add_parser("remove", help="delete a user and end its sessions")
    ur.add_argument("name", help="the user name")
    u.set_defaults(func=_users)
    src = sub.add_parser("sources", help="the source library")
    ssub = src.add_subparsers(dest="sources_cmd", required=True)
    sa = ssub.add_parser("add", help="register .txt/.jsonl files or directories of them")
    sa.add_argument("paths", nargs="+", help=".txt files (one work each), .jsonl files ({id, title, text} per "
                    "line) or directories searched for both")
    ssub.add_parser("list", help="print id, title and author of every registered work")
    sr = ssub.add_parser("remove", help="remove a work from the library")
    sr.add_argument("id", help="the work's id, as `sources list` prints it")
    src.set_defaults(func=_sources)
    m = sub.add_parser("matches", help="list stored matches, newest first")
    m.add_argument("--json", action="store_true", help="one JSON object per line")
    m.add_argument("--status", choices=STATUSES, help="only matches with this review status")
    m.add_argument("--limit", type=_positive, default=1000, help="at most this many matches (default 1000)")
    m.set_defaults(func=_matches)
    from admin import evidence_cli

    evidence_cli.add_parser(sub)
    notices_cli.add_parser(sub)
    return p


def _positive(value: str) -> int:
    """argparse type: a whole number >= 1."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: give 1 or more")
    return n


def main(argv: Sequence[str] | None = None, prog: str = "python -m admin") -> int:
    """Entry point of `python -m admin`: a store that cannot be reached is one line, exit 1; a closed
    pipe (| head) ends quietly."""
    from storage.errors import StorageError

    args = build_parser(prog).parse_args(argv)
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        return code
    except StorageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the final flush cannot fail
        except (OSError, ValueError):
            pass
        return 0
    except KeyboardInterrupt:
        return 130
