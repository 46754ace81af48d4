"""python -m storage status [--json] | stop | start | rebuild-index | replay-spool | purge --site S | --url U |
--before DATE | outcomes [--run ID] [--outcome O] [--reason R] [--url U] | pages [--site S] [--since D] |
duplicates [--of PAGE|URL]."""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

from fingerprint.cliparser import OneLineParser

from . import listing
from . import servers as srv
from .config import StoreConfig
from .connection import COLLECTIONS, spool_dir
from .errors import StorageError, mask_credentials
from .spool import Spool
from .store import Store, open_store


def _status(config: StoreConfig) -> dict[str, Any]:
    """Status without starting anything: embedded servers that are down are reported as down."""
    embedded = srv.describe(config.var_path)
    mongo_uri = config.mongo_uri or embedded["mongo"]["uri"]
    redis_url = config.redis_url or embedded["redis"]["uri"]
    base = {"var_dir": str(config.var_path), "db_name": config.db_name, "key_prefix": config.key_prefix}
    if (config.mongo_uri or embedded["mongo"]["running"]) and (config.redis_url or embedded["redis"]["running"]):
        store = Store(config.with_(timeout_seconds=1.0, retry_seconds=0, auto_restart=False), mongo_uri, redis_url,
                      {"mongo": not config.mongo_uri, "redis": not config.redis_url})
        try:
            out = store.status()
        finally:
            store.close()
    else:
        out = dict(base, counts=None, index=None)
        for name, uri in (("mongo", mongo_uri), ("redis", redis_url)):
            configured = bool(config.mongo_uri if name == "mongo" else config.redis_url)
            ok = bool(uri) and _answers(name, uri)
            out[name] = {"uri": uri, "embedded": not configured, "ok": ok}
            if not ok:
                out[name]["error"] = "not running (starts on the next crawl or admin start)" if not configured \
                    else "not answering"
        out["counts"] = _mongo_counts(config, mongo_uri) if out["mongo"]["ok"] else None
        out["spool"] = {"entries": Spool(spool_dir(config)).count(), "dir": str(spool_dir(config))}
    for name in ("mongo", "redis"):
        if out[name]["embedded"]:
            out[name]["pid"] = embedded[name]["pid"]
            out[name]["log"] = embedded[name]["log"]
    return out


def _mongo_counts(config: StoreConfig, uri: str) -> dict[str, int] | None:
    """Documents per collection from MongoDB alone (Redis may be down: each server reports what it can)."""
    import pymongo

    from .schema import count_all, counts_exactly

    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=1000)
    try:
        exact = counts_exactly(client)
        return {n: count_all(client[config.db_name][n], exact) for n in COLLECTIONS}
    except pymongo.errors.PyMongoError:
        return None
    finally:
        client.close()


def _answers(name: str, uri: str) -> bool:
    try:
        if name == "redis":
            import redis

            from redis.backoff import NoBackoff
            from redis.retry import Retry

            return bool(redis.Redis.from_url(uri, socket_timeout=1, socket_connect_timeout=1,
                                             retry=Retry(NoBackoff(), 0)).ping())
        import pymongo

        c = pymongo.MongoClient(uri, serverSelectionTimeoutMS=1000)
        try:
            return c.admin.command("ping").get("ok") == 1
        finally:
            c.close()
    except Exception:  # noqa: BLE001
        return False


def _print_status(st: dict[str, Any]) -> None:
    for name, label in (("mongo", "MongoDB"), ("redis", "Redis")):
        s = st[name]
        kind = "embedded" if s["embedded"] else "configured"
        state = "answering" if s["ok"] else f"DOWN ({s.get('error', '')})"
        print(f"{label:8} {kind:10} {s['uri'] or '-'}  {state}")
    print(f"var dir  {st['var_dir']}   database {st['db_name']}   key prefix {st['key_prefix']}")
    if st.get("counts"):
        print("counts   " + "  ".join(f"{k} {v}" for k, v in st["counts"].items()))
    ix = st.get("index")
    if ix:
        kind = "Redis Cluster" if ix.get("cluster") else "Redis"
        print(f"index    {kind} used_memory {ix['used_memory']} bytes; in Redis / in MongoDB: "
              + "  ".join(f"{name} {ix[name]['redis']}/{ix[name]['mongo']}" for name in ("simhash", "sketches", "seeds")))
    elif st["redis"]["ok"] and st.get("counts") is not None:
        print(f"index    UNREADABLE ({st.get('index_error', 'unknown error')})")
    if st.get("spool"):
        print(f"spool    {st['spool']['entries']} entries waiting in {st['spool']['dir']}")
    if st.get("evidence"):
        print(f"evidence {st['evidence']}")


def main(argv: list[str] | None = None, prog: str = "python -m storage") -> int:
    """Entry point; returns the exit code (errors print one line, no stack trace)."""
    p = OneLineParser(prog=prog, description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("status", help="servers in use, whether they answer, counts")
    s.add_argument("--json", action="store_true", help="print the status as JSON")
    sub.add_parser("start", help="start (or find) the embedded servers")
    sub.add_parser("stop", help="stop the embedded servers cleanly")
    sub.add_parser("rebuild-index", help="rebuild the Redis index from MongoDB")
    sub.add_parser("replay-spool", help="replay writes spooled while a server was down")
    pg = sub.add_parser("purge", help="remove pages from both stores")
    pg.add_argument("--site", help="pages of this site (as stored: the profile name or host)")
    pg.add_argument("--url", help="the page with this URL")
    pg.add_argument("--before", help="YYYY-MM-DD: pages fetched before this date")
    listing.add_commands(sub)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    config = StoreConfig.from_env()
    try:
        if args.cmd == "status":
            st = _status(config)
            for name in ("mongo", "redis"):   # status is for people and logs: never show a password
                st[name]["uri"] = mask_credentials(st[name]["uri"] or "") or None
            print(json.dumps(st, indent=2, default=str)) if args.json else _print_status(st)
            sys.stdout.flush()
            return 0 if st["mongo"]["ok"] and st["redis"]["ok"] and st.get("index") is not None else 1
        if args.cmd == "stop":
            done = srv.stop(config.var_path)
            for name, was in done.items():
                print(f"{name}: {'stopped' if was else 'was not running'}")
            return 0
        if args.cmd == "start":
            for name, info in srv.ensure_all(config.var_path).items():
                print(f"{name}: {info.shown_uri} (pid {info.pid})")
            return 0
        if args.cmd == "purge" and not (args.site or args.url or args.before):
            pg.error("purge needs --site, --url or --before")
        with open_store(config) as store:
            if args.cmd == "rebuild-index":
                print(f"indexed {store.rebuild_index()} pages")
            elif args.cmd == "replay-spool":
                print(json.dumps(store.replay_spool()))
            elif args.cmd == "purge":
                print(json.dumps(store.purge(site=args.site, url=args.url, before=args.before)))
            elif args.cmd in listing.COLUMNS:
                code = listing.run(store, args)
                sys.stdout.flush()
                return code
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        return 0
    except (StorageError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `status --json | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:  # e.g. a ZHDEDUP_VAR that cannot be created
        print(f"error: {e.filename or config.var_path}: {e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
