"""EvidenceLog (`store.evidence`): what a match rests on, frozen at match time, in a tamper-evident log
(collection `evidence`).

Each record keeps the raw response bytes (zlib), the response headers, the fetch time, the final URL,
the whole HTTP exchange (redirects, every header as sent, server IP:port, certificate; `exchange`), the
extracted text, the matched passages and SHA-256 digests of the raw bytes and of the text. Records
form a hash chain, as in a transparency log: record n has `_id` n (0, 1, 2, ...), its `content_digest`
is the SHA-256 of its canonical JSON (without the chain fields) and its `digest` is
SHA-256(prev_digest || content_digest), prev_digest being record n-1's digest (64 zeros for record 0).
Editing a record breaks its own digests, deleting one leaves a gap, and collection `evidence_head` (the highest
appended seq and digest) shows a truncated tail. Several crawler processes append at once: the seq is
the unique `_id`, so two writers racing for one seq cannot both win; the loser re-reads and retries.
"""
from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterator

import pymongo
from bson.binary import Binary
from pymongo.errors import DuplicateKeyError

from .connection import Connection
from .errors import StorageUnavailable
from .schema import now, to_oid, utc

GENESIS = "0" * 64
HEAD_ID = "head"
CHAIN_FIELDS = ("_id", "prev_digest", "content_digest", "digest")
APPEND_ATTEMPTS = 1000
RAW_MAX = 16 * 1024 * 1024   # compressed raw bodies above this are kept as their digest only
CAPTURE_MAX = 6 * 1024 * 1024  # a screenshot or PDF above this is kept as its digest only (16 MB per document)
BINARY_FIELDS = ("raw", "png", "pdf")  # bytes a record covers by their SHA-256 fields, not in its content digest


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 (the digest every evidence field uses)."""
    return hashlib.sha256(data).hexdigest()


def canonical_json(value: Any) -> bytes:
    """Deterministic JSON bytes (sorted keys, no spaces, UTF-8; times as ISO 8601 UTC, bytes as base64)."""
    def default(v: Any) -> Any:
        if isinstance(v, datetime):
            return utc(v).isoformat(timespec="milliseconds")  # MongoDB keeps milliseconds
        if isinstance(v, (bytes, bytearray)):
            return base64.b64encode(bytes(v)).decode("ascii")
        return str(v)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=default).encode("utf-8")


def content_digest(record: dict) -> str:
    """SHA-256 of a record's content: every field except the chain fields, bytes by their digests."""
    body = {k: v for k, v in record.items() if k not in CHAIN_FIELDS and k not in BINARY_FIELDS}
    return sha256_hex(canonical_json(body))


def chain_digest(prev_digest: str, content: str) -> str:
    """Digest of a chain entry: SHA-256 over the previous entry's digest and this entry's content digest."""
    return sha256_hex(bytes.fromhex(prev_digest) + bytes.fromhex(content))


@dataclass
class VerifyResult:
    """Outcome of a chain check: how many records were checked and the first problem (None: intact)."""

    checked: int
    bad_seq: int | None = None
    problem: str | None = None
    stamps: Any = None   # storage.stamps.StampReport when the timestamps were checked too

    @property
    def ok(self) -> bool:
        """True when every record and the head agree (and every stored timestamp, when checked)."""
        return self.problem is None and (self.stamps is None or self.stamps.ok)


def check_record(rec: dict, prev_digest: str) -> str | None:
    """What is wrong with one record given the previous digest (None when it is intact)."""
    problem = check_capture(rec) if rec.get("kind") == "capture" else check_snapshot(rec)
    if problem:
        return problem
    if content_digest(rec) != rec.get("content_digest"):
        return "content differs from content_digest (the record was edited)"
    if rec.get("prev_digest") != prev_digest:
        return "prev_digest does not link to the previous record (a record was changed or removed)"
    if chain_digest(prev_digest, rec["content_digest"]) != rec.get("digest"):
        return "digest does not cover prev_digest and content_digest"
    return None


def check_capture(rec: dict) -> str | None:
    """What is wrong with a rendered capture's bytes (None: the screenshot and PDF match their digests)."""
    for name, what in (("png", "screenshot (PNG)"), ("pdf", "PDF")):
        data = rec.get(name)
        if data is not None and sha256_hex(bytes(data)) != rec.get(f"{name}_sha256"):
            return f"the capture's {what} does not match {name}_sha256"
    return None


def check_snapshot(rec: dict) -> str | None:
    """What is wrong with a snapshot's raw bytes, text or exchange (None: they match their digests)."""
    raw = rec.get("raw")
    if raw is not None:
        try:
            if sha256_hex(zlib.decompress(bytes(raw))) != rec.get("raw_sha256"):
                return "raw bytes do not match raw_sha256"
        except zlib.error:
            return "raw bytes are corrupt"
    if sha256_hex(str(rec.get("text") or "").encode("utf-8")) != rec.get("text_sha256"):
        return "text does not match text_sha256"
    if rec.get("exchange") and sha256_hex(canonical_json(rec["exchange"])) != rec.get("exchange_sha256"):
        return "the HTTP exchange does not match exchange_sha256"
    return None


class EvidenceLog:
    """Append match evidence to the hash-chained log, read it back, verify the chain, prove one record."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn   # the store's connection: retry, outages

    @property
    def records(self) -> Any:
        """The evidence log collection (one record per snapshot, `_id` = seq)."""
        return self.conn.db["evidence"]

    @property
    def _head(self) -> Any:
        return self.conn.db["evidence_head"]

    def ensure_indexes(self) -> None:
        """The evidence log's lookup by match."""
        self.records.create_index("match_id")

    def add(self, match_id: str, snapshot: dict, fresh: bool = False) -> int:
        """Freeze what a match rests on and chain it to the log; returns its seq. The match gets `evidence_seq`
        (a re-crawl that fetched the same bytes and matched the same way keeps the earlier snapshot, unless
        `fresh`: a page back after its takedown is recorded again, to prove it is up now)."""
        record = self._evidence_record(match_id, snapshot)
        held = self.conn._retry("mongo", self.conn.db.matches.find_one, {"_id": to_oid(match_id)}, {"evidence_seq": 1})
        last = self.get(held["evidence_seq"]) if isinstance((held or {}).get("evidence_seq"), int) else None
        if last and not fresh and all(last.get(k) == record[k] for k in ("raw_sha256", "text_sha256", "suspect_spans", "source_spans")):
            return int(last["_id"])  # the same page matched the same way again: its snapshot stands
        seq = self.conn._retry("mongo", self._append, record)
        self.conn._retry("mongo", self.conn.db.matches.update_one, {"_id": to_oid(match_id)},
                    {"$set": {"evidence_seq": seq, "evidence_digest": record["digest"]}})
        return seq

    def add_capture(self, match_id: str, capture: dict) -> int:
        """Chain a rendered capture (full-page PNG, PDF) of a match's page; the match gets `capture_seq`."""
        record = {"kind": "capture", "match_id": str(match_id), "url": capture.get("url"),
                  "final_url": capture.get("final_url"), "title": capture.get("title"),
                  "captured": utc(capture["captured"]), "browser": capture.get("browser"), "recorded": now()}
        for name in ("png", "pdf"):
            data = bytes(capture.get(name) or b"")
            record.update({name: Binary(data) if len(data) <= CAPTURE_MAX else None, f"{name}_len": len(data),
                           f"{name}_sha256": sha256_hex(data)})
        seq = self.conn._retry("mongo", self._append, record)
        self.conn._retry("mongo", self.conn.db.matches.update_one, {"_id": to_oid(match_id)},
                    {"$set": {"capture_seq": seq, "capture_digest": record["digest"]}})
        return seq

    def capture_for(self, match: dict) -> dict | None:
        """The newest rendered capture of a match, or None."""
        seq = match.get("capture_seq")
        return self.get(seq) if isinstance(seq, int) else None

    def capture_facts(self, match: dict) -> dict | None:
        """The newest capture's record without its bytes (pages show it), with has_png / has_pdf; or None."""
        seq = match.get("capture_seq")
        if not isinstance(seq, int):
            return None
        rec = self.conn._retry("mongo", self.records.find_one, {"_id": seq}, {"png": 0, "pdf": 0})
        if rec is not None:
            for name in ("png", "pdf"):
                rec[f"has_{name}"] = self.conn._retry("mongo", self.records.count_documents,
                                                 {"_id": seq, name: {"$ne": None}}) == 1
        return rec

    @staticmethod
    def _evidence_record(match_id: str, snap: dict) -> dict:
        raw = snap.get("raw") or b""
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        text = str(snap.get("text") or "")
        packed = zlib.compress(bytes(raw), 6)
        exchange = snap.get("exchange") or None
        return {
            "match_id": str(match_id), "suspect_url": snap.get("suspect_url"),
            "final_url": snap.get("final_url") or snap.get("suspect_url"),
            "fetched": utc(snap["fetched"]) if isinstance(snap.get("fetched"), datetime) else snap.get("fetched"),
            "status": snap.get("status"),
            "headers": {str(k): str(v) for k, v in (snap.get("headers") or {}).items()},
            "raw": Binary(packed) if len(packed) <= RAW_MAX else None, "raw_len": len(raw),
            "raw_sha256": sha256_hex(bytes(raw)), "text": text, "text_sha256": sha256_hex(text.encode("utf-8")),
            "source_id": snap.get("source_id"), "source_title": snap.get("source_title"),
            "score": snap.get("score"), "methods": list(snap.get("methods") or []),
            "suspect_spans": [list(s) for s in snap.get("suspect_spans") or []],
            "source_spans": [list(s) for s in snap.get("source_spans") or []],
            "passages": snap.get("passages") or [],
            # redirects, every header as sent, server IP:port, certificate: its digest is in the record too
            "exchange": exchange, "exchange_sha256": sha256_hex(canonical_json(exchange)) if exchange else None,
            **({"reappeared": snap["reappeared"]} if snap.get("reappeared") else {}),
            "recorded": now(),
        }

    def _append(self, record: dict) -> int:
        """Take the next seq and insert; a writer that lost the race for that seq re-reads and retries.
        An earlier attempt whose reply was lost (the store retries it) is found by its content digest."""
        done = self.records.find_one({"match_id": record["match_id"], "content_digest": content_digest(record)},
                                      {"digest": 1})
        if done is not None:
            self._advance_head(int(done["_id"]), done["digest"])
            return int(done["_id"])
        for _ in range(APPEND_ATTEMPTS):
            last = self.records.find_one({}, {"digest": 1},
                                          sort=[("_id", pymongo.DESCENDING)])
            seq = 0 if last is None else int(last["_id"]) + 1
            prev = GENESIS if last is None else last["digest"]
            record["content_digest"] = content_digest(record)
            record.update(_id=seq, prev_digest=prev, digest=chain_digest(prev, record["content_digest"]))
            try:
                self.records.insert_one(record)
            except DuplicateKeyError:
                continue
            self._advance_head(seq, record["digest"])
            return seq
        raise StorageUnavailable("MongoDB", "the evidence log stayed contended; try again")

    def _advance_head(self, seq: int, digest: str) -> None:
        try:
            self._head.update_one({"_id": HEAD_ID, "seq": {"$lt": seq}},
                                     {"$set": {"seq": seq, "digest": digest}}, upsert=True)
        except DuplicateKeyError:
            pass  # a later record already moved the head on

    def get(self, seq: int) -> dict | None:
        """One evidence record by seq (raw bytes still compressed), or None."""
        return self.conn._retry("mongo", self.records.find_one, {"_id": int(seq)})

    def for_match(self, match: dict) -> dict | None:
        """The evidence record a match points at (its latest snapshot), or None for matches without one."""
        seq = match.get("evidence_seq")
        return self.get(seq) if isinstance(seq, int) else None

    def each(self) -> Iterator[dict]:
        """Every evidence record in seq order."""
        yield from self.records.find({}).sort("_id", pymongo.ASCENDING)

    def head(self) -> dict | None:
        """{seq, digest} of the newest record the log has announced, or None when the log is empty."""
        return self.conn._retry("mongo", self._head.find_one, {"_id": HEAD_ID})

    def verify(self) -> VerifyResult:
        """Walk the whole chain; the first record that is edited, missing or out of order is reported."""
        prev, expected, n = GENESIS, 0, 0
        for rec in self.each():
            if rec["_id"] != expected:
                return VerifyResult(n, expected, f"record {expected} is missing")
            problem = check_record(rec, prev)
            if problem:
                return VerifyResult(n, expected, problem)
            prev, expected, n = rec["digest"], expected + 1, n + 1
        head = self.head()
        if head is not None:
            if head["seq"] >= expected:
                return VerifyResult(n, expected, f"the log ends at {expected - 1} but its head says {head['seq']} "
                                                  "(records were removed from the end)")
            if head["seq"] == expected - 1 and head["digest"] != prev:
                return VerifyResult(n, head["seq"], "the head's digest differs from the last record's")
        return VerifyResult(n)

    def proof(self, seq: int) -> dict:
        """The chain from record seq to the head: the content digests after it let anyone recompute the head."""
        rec = self.get(seq)
        if rec is None:
            raise KeyError(seq)
        later = [r["content_digest"] for r in self.records.find(
            {"_id": {"$gt": int(seq)}}, {"content_digest": 1}).sort("_id", pymongo.ASCENDING)]
        head = self.head() or {}
        return {"seq": int(seq), "prev_digest": rec["prev_digest"], "content_digest": rec["content_digest"],
                "digest": rec["digest"], "later_content_digests": later,
                "head": {"seq": head.get("seq"), "digest": head.get("digest")}}


def raw_bytes(record: dict) -> bytes | None:
    """The raw response bytes of an evidence record (decompressed), or None when only the digest was kept."""
    raw = record.get("raw")
    return zlib.decompress(bytes(raw)) if raw is not None else None
