"""`python -m admin evidence verify|export`: check the evidence log's hash chain; write one match's evidence pack."""
from __future__ import annotations

import argparse
import json
import sys
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from storage.evidence import canonical_json, raw_bytes
from storage.stamps import fmt_time

README = """Evidence pack for match {match_id}
=======================================

What the crawler fetched when it found the match, frozen at that moment, and the proof that the record
is part of the evidence log unchanged.

  raw.bin          the response body exactly as received ({raw_len} bytes; HTML in the page's own encoding)
  headers.json     the response headers; final URL, HTTP status and fetch time are in record.json
  text.txt         the text extracted from the page (UTF-8); the passages' offsets count its characters
  passages.json    the matched passages: offsets and text on both sides (suspect page and registered work)
  record.json      the evidence record: every field above plus the digests and its place in the chain
  proof.json       the chain from this record to the log's head when the pack was written
  check.py         recomputes everything below with Python 3's standard library: python3 check.py

How to check by hand
--------------------
1. sha256sum raw.bin   must print record.json's raw_sha256   ({raw_sha256})
2. sha256sum text.txt  must print record.json's text_sha256  ({text_sha256})
3. content_digest = SHA-256 of record.json's fields except _id, prev_digest, content_digest and digest,
   written as JSON with sorted keys, no spaces, UTF-8 (check.py does this).
4. digest = SHA-256(bytes of prev_digest + bytes of content_digest) (hex digests decoded to 32 bytes each);
   it must equal record.json's digest ({digest}).
5. Starting from digest, apply step 4 with each of proof.json's later_content_digests in order; the result
   must equal the head digest ({head_digest}, record {head_seq}). Anyone holding an earlier copy of the head
   (or a later pack) can see that the log was only ever appended to.
On the server, `python -m admin evidence verify` checks every record of the log the same way.
"""

CHECK_PY = '''"""Recompute this evidence pack's digests and chain (Python 3 standard library only)."""
import hashlib, json, sys
from pathlib import Path

here = Path(__file__).parent
rec = json.loads((here / "record.json").read_text("utf-8"))
proof = json.loads((here / "proof.json").read_text("utf-8"))
sha = lambda b: hashlib.sha256(b).hexdigest()
chain = lambda a, b: sha(bytes.fromhex(a) + bytes.fromhex(b))
body = {k: v for k, v in rec.items() if k not in ("_id", "prev_digest", "content_digest", "digest")}
checks = {
    "raw_sha256": sha((here / "raw.bin").read_bytes()) == rec["raw_sha256"],
    "text_sha256": sha((here / "text.txt").read_bytes()) == rec["text_sha256"],
    "content_digest": sha(json.dumps(body, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode("utf-8")) == rec["content_digest"],
    "digest": chain(rec["prev_digest"], rec["content_digest"]) == rec["digest"],
}
d = rec["digest"]
for c in proof["later_content_digests"]:
    d = chain(d, c)
checks["chain to head"] = d == proof["head"]["digest"]
for name, ok in checks.items():
    print(("ok   " if ok else "FAIL ") + name)
sys.exit(0 if all(checks.values()) else 1)
'''


def record_json(rec: dict) -> dict:
    """The record as the pack's JSON (raw bytes left out: they are raw.bin), in the form its digest covers."""
    return json.loads(canonical_json({k: v for k, v in rec.items() if k != "raw"}))


def write_pack(store: Any, match_id: str, out: Path | BinaryIO) -> dict:
    """Write the evidence pack of one match to a zip file (path or binary file object); returns the record."""
    match = store.get_match(match_id)
    if not match:
        raise LookupError(f"no match with id {match_id!r}")
    rec = store.evidence_for(match)
    if rec is None:
        raise LookupError(f"match {match_id} has no evidence snapshot (it was made before evidence was kept)")
    proof = store.evidence_proof(rec["_id"])
    raw = raw_bytes(rec) or b""
    doc = record_json(rec)
    readme = README.format(match_id=match_id, raw_len=rec.get("raw_len"), raw_sha256=rec["raw_sha256"],
                           text_sha256=rec["text_sha256"], digest=rec["digest"],
                           head_digest=proof["head"]["digest"], head_seq=proof["head"]["seq"])
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("README.txt", readme)
        zf.writestr("raw.bin", raw)
        zf.writestr("text.txt", str(rec.get("text") or "").encode("utf-8"))
        zf.writestr("headers.json", json.dumps(rec.get("headers") or {}, ensure_ascii=False, indent=2))
        zf.writestr("passages.json", json.dumps(doc.get("passages") or [], ensure_ascii=False, indent=2))
        zf.writestr("record.json", json.dumps(doc, ensure_ascii=False, indent=2))
        zf.writestr("proof.json", json.dumps({**proof, "written": datetime.utcnow().isoformat() + "Z"}, indent=2))
        zf.writestr("check.py", CHECK_PY)
    return rec


def tsa_settings() -> dict:
    """The TSA settings as the crawl reads them (declared once, in crawler/settings.py, from the environment)."""
    from crawler import settings

    return {"url": settings.ZHDEDUP_TSA_URL, "ca": settings.ZHDEDUP_TSA_CA, "timeout": settings.ZHDEDUP_TSA_TIMEOUT}


def _verify(store: Any) -> int:
    """Chain and timestamps; exit 0 intact, 1 with the first bad record or stamp named."""
    from storage.timestamping import TimestampError, load_roots

    ca = tsa_settings()["ca"]
    try:
        roots = load_roots(ca) if ca else None
    except TimestampError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    res = store.verify_evidence(roots)
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
        stamp = store.stamp_head(client)
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
        rec = write_pack(store, args.match_id, out)
    except LookupError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    print(f"wrote {out}: evidence record {rec['_id']}, digest {rec['digest']}")
    return 0


def run(args: argparse.Namespace) -> int:
    """`evidence verify | status | stamp | export MATCH_ID OUT.zip`."""
    from admin.cli import open_default_store

    store = open_default_store()
    if args.evidence_cmd == "verify":
        return _verify(store)
    if args.evidence_cmd == "status":
        print(store.stamp_status().summary())
        return 0
    if args.evidence_cmd == "stamp":
        return _stamp(store)
    return _export(store, args)


def add_parser(sub: Any) -> None:
    """Register `evidence verify | status | stamp | export` under the admin CLI."""
    e = sub.add_parser("evidence", help="check the evidence log and its timestamps; export a match's evidence pack")
    esub = e.add_subparsers(dest="evidence_cmd", required=True)
    esub.add_parser("verify", help="recompute every record's digests and the hash chain; check every timestamp")
    esub.add_parser("status", help="what is timestamped, and since when not")
    esub.add_parser("stamp", help="have the TSA (ZHDEDUP_TSA_URL) stamp the chain's head now")
    ex = esub.add_parser("export", help="write a zip: raw HTML, text, passages, digests, chain proof, README")
    ex.add_argument("match_id")
    ex.add_argument("out", metavar="OUT.zip")
    e.set_defaults(func=run)
