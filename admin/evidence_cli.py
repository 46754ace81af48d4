"""`python -m admin evidence verify|status|stamp|export|export-notice`: check the evidence log's hash chain and timestamps,
stamp its head, write one match's evidence pack (admin/evidence_pack.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from admin.db import open_default_store
from admin.evidence_pack import tsa_settings, write_notice_pack, write_pack
from storage.stamps import fmt_time


def _verify(store: Any) -> int:
    """Chain and timestamps; exit 0 intact, 1 with the first bad record or stamp named."""
    from storage.timestamping import TimestampError, load_roots

    ca = tsa_settings()["ca"]
    try:
        roots = load_roots(ca) if ca else None
    except TimestampError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    res = store.evidence.verify(roots)
    if res.problem:
        print(f"evidence log BROKEN at record {res.bad_seq}: {res.problem} ({res.checked} records before it are intact)",
              file=sys.stderr)
        return 1
    rep = res.stamps
    if not rep.ok:
        print(f"evidence log BROKEN at the timestamp of record {rep.bad_stamp}: {rep.problem}", file=sys.stderr)
        return 1
    checked = "signatures checked against " + ca if rep.signatures_checked else \
        "signatures not checked: set ZHDEDUP_TSA_CA"
    print(f"evidence log intact: {res.checked} records; {rep.stamps} timestamps ({checked}); {rep.summary()}")
    return 0


def _stamp(store: Any) -> int:
    """Stamp the head now (after a crawl that ended while the TSA was away)."""
    from storage.timestamping import TimestampError, make_client_or_none

    cfg = tsa_settings()
    try:
        client = make_client_or_none(cfg["url"], cfg["ca"], cfg["timeout"])
        if client is None:
            print("error: ZHDEDUP_TSA_URL is not set", file=sys.stderr)
            return 2
        stamp = store.evidence.stamp_head(client)
    except TimestampError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("nothing new to timestamp" if stamp is None else
          f"timestamped record {stamp['_id']} (digest {stamp['digest']}) at {fmt_time(stamp['gen_time'])}")
    return 0


def _export(store: Any, args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not out.parent.is_dir():
        print(f"error: directory {out.parent} does not exist", file=sys.stderr)
        return 2
    try:
        if args.evidence_cmd == "export-notice":
            notice = write_notice_pack(store, args.notice_id, out)
            print(f"wrote {out}: notice {args.notice_id}, {len(notice['items'])} URLs")
            return 0
        rec = write_pack(store, args.match_id, out)
    except LookupError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    print(f"wrote {out}: evidence record {rec['_id']}, digest {rec['digest']}")
    return 0


def run(args: argparse.Namespace) -> int:
    """`evidence verify | status | stamp | export MATCH_ID OUT.zip | export-notice NOTICE_ID OUT.zip`."""
    store = open_default_store()
    if args.evidence_cmd == "verify":
        return _verify(store)
    if args.evidence_cmd == "status":
        print(store.evidence.stamp_status().summary())
        return 0
    if args.evidence_cmd == "stamp":
        return _stamp(store)
    return _export(store, args)


def add_parser(sub: Any) -> None:
    """Register `evidence verify | status | stamp | export | export-notice` under the admin CLI."""
    e = sub.add_parser("evidence", help="check the evidence log and its timestamps; export a match's evidence pack")
    esub = e.add_subparsers(dest="evidence_cmd", required=True)
    esub.add_parser("verify", help="recompute every record's digests and the hash chain; check every timestamp")
    esub.add_parser("status", help="what is timestamped, and since when not")
    esub.add_parser("stamp", help="have the TSA (ZHDEDUP_TSA_URL) stamp the chain's head now")
    ex = esub.add_parser("export", help="write a zip: raw exchange, text, passages, chain proof, timestamp, "
                                          "manifest, README, check.py")
    ex.add_argument("match_id")
    ex.add_argument("out", metavar="OUT.zip")
    en = esub.add_parser("export-notice", help="write a zip: the notice and the evidence pack of every URL it lists")
    en.add_argument("notice_id")
    en.add_argument("out", metavar="OUT.zip")
    e.set_defaults(func=run)
