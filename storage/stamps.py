"""StampedLog (`store.evidence`, an EvidenceLog): RFC 3161 timestamps of the evidence chain's head
(collection `evidence_stamps`).

A stamp is kept once and never changed: `_id` is the seq of the head it stamps, `stamped` the exact
bytes the TSA signed (storage.timestamping.stamped_bytes), `token` the TimeStampResp DER. A token over
head h proves the time of record h and, through the chain, of every record before it. A TSA that is down
or wrong costs nothing but time: the state document (`evidence_tsa`) says since when the log is not
timestamped and why, and the next attempt stamps the newer head, which covers the records in between.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator

import pymongo
from bson.binary import Binary
from pymongo.errors import DuplicateKeyError

from .evidence import EvidenceLog, VerifyResult, sha256_hex
from .schema import now, utc
from .timestamping import TimestampError, TSAClient, check_token, parse_stamped, stamped_bytes, token_info

STATE_ID = "state"


@dataclass
class StampReport:
    """The log's timestamps: the newest stamped seq, what is not stamped yet, and the first bad stamp."""

    records: int
    stamps: int = 0
    stamped_to: int | None = None          # every record up to this seq has a verified time
    stamped_at: datetime | None = None     # the TSA's time for stamped_to
    unstamped_since: datetime | None = None  # recorded time of the first record no stamp covers
    signatures_checked: bool = False
    bad_stamp: int | None = None
    problem: str | None = None
    last_error: str | None = field(default=None)

    @property
    def ok(self) -> bool:
        """True when no stored stamp is wrong (records not stamped yet are reported, not failed)."""
        return self.problem is None

    @property
    def all_stamped(self) -> bool:
        """True when a verified stamp covers every record of the log."""
        return self.records == 0 or self.stamped_to == self.records - 1

    def summary(self) -> str:
        """One line: all stamped, or since when not (the words `status`, the CLI and the admin show)."""
        if self.records == 0:
            return "no evidence records to timestamp"
        if self.all_stamped:
            return (f"every evidence record timestamped (the last stamp covers record {self.stamped_to}, "
                    f"TSA time {fmt_time(self.stamped_at)})")
        first = 0 if self.stamped_to is None else self.stamped_to + 1
        line = f"evidence records {first}..{self.records - 1} not timestamped since {fmt_time(self.unstamped_since)}"
        return line + (f" (last TSA error: {self.last_error})" if self.last_error else "")


def fmt_time(t: Any) -> str:
    """A stored time as ISO 8601 UTC (MongoDB gives naive UTC datetimes back)."""
    return t.strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(t, datetime) else "-"


class StampedLog(EvidenceLog):
    """The evidence log with its timestamps: stamp the chain's head with a TSA, say what is not stamped yet,
    and verify every stamp (`store.evidence`)."""

    @property
    def stamps(self) -> Any:
        """The timestamp tokens, one per stamped head (`_id` = its seq)."""
        return self.conn.db["evidence_stamps"]

    def _last_record(self) -> dict | None:
        return self.conn._retry("mongo", self.records.find_one, {}, {"digest": 1, "recorded": 1},
                           sort=[("_id", pymongo.DESCENDING)])

    def last_stamp(self) -> dict | None:
        """The stamp of the newest stamped head, or None."""
        return self.conn._retry("mongo", self.stamps.find_one, {}, sort=[("_id", pymongo.DESCENDING)])

    def stamp_head(self, client: TSAClient) -> dict | None:
        """Stamp the newest record unless a stamp covers it; returns the new stamp (None: nothing to do).
        A TimestampError is recorded in the TSA state and raised again: the caller retries with backoff."""
        head, last = self._last_record(), self.last_stamp()
        if head is None or (last is not None and int(last["_id"]) >= int(head["_id"])):
            return None
        data = stamped_bytes(head["_id"], head["digest"])
        try:
            token = client.stamp(data)
        except TimestampError as exc:
            self.conn._retry("mongo", self.conn.db["evidence_tsa"].update_one, {"_id": STATE_ID},
                        {"$set": {"last_error": str(exc), "last_attempt": now()}}, upsert=True)
            raise
        doc = {"_id": int(head["_id"]), "digest": head["digest"], "stamped": Binary(data), "token": Binary(token.der),
               "token_sha256": sha256_hex(token.der),  # a token's certificate bag is not signed: this covers it
               "nonce": str(token.nonce), "serial": str(token.serial), "gen_time": token.gen_time,
               "tsa": client.url, "recorded": now()}
        try:
            self.conn._retry("mongo", self.stamps.insert_one, doc)
        except DuplicateKeyError:
            pass  # another crawler stamped this head first: its token stands
        self.conn._retry("mongo", self.conn.db["evidence_tsa"].update_one, {"_id": STATE_ID},
                    {"$set": {"last_error": None, "last_stamp": now()}}, upsert=True)
        return doc

    def stamp_covering(self, seq: int) -> dict | None:
        """The earliest stamp whose head is at or after seq (it proves that record's time), or None."""
        return self.conn._retry("mongo", self.stamps.find_one, {"_id": {"$gte": int(seq)}},
                           sort=[("_id", pymongo.ASCENDING)])

    def each_stamp(self) -> Iterator[dict]:
        """Every stamp in seq order."""
        yield from self.stamps.find({}).sort("_id", pymongo.ASCENDING)

    def stamp_status(self) -> StampReport:
        """What is stamped and since when the log is not (no token checks: cheap enough for status pages)."""
        head, last = self._last_record(), self.last_stamp()
        state = self.conn._retry("mongo", self.conn.db["evidence_tsa"].find_one, {"_id": STATE_ID}) or {}
        report = StampReport(records=0 if head is None else int(head["_id"]) + 1,
                             stamps=self.conn._retry("mongo", self.stamps.count_documents, {}),
                             last_error=state.get("last_error"))
        if last is not None:
            report.stamped_to, report.stamped_at = int(last["_id"]), last.get("gen_time")
        self._unstamped_since(report)
        return report

    def _unstamped_since(self, report: StampReport) -> None:
        """Fill in the recorded time of the first record no stamp covers."""
        first = -1 if report.stamped_to is None else report.stamped_to
        if first + 1 < report.records:
            rec = self.conn._retry("mongo", self.records.find_one, {"_id": first + 1}, {"recorded": 1})
            report.unstamped_since = (rec or {}).get("recorded")

    def verify(self, roots: list | None = None) -> VerifyResult:
        """The chain check, then every stamp's bytes and token (signatures too when CA roots are given)."""
        result = super().verify()
        result.stamps = self.verify_stamps(result.checked, roots)
        return result

    def verify_stamps(self, records: int, roots: list | None) -> StampReport:
        """Check each stamp names a record's digest and its token verifies over the stamped bytes."""
        report = StampReport(records=records, signatures_checked=bool(roots))
        for stamp in self.each_stamp():
            problem = self._stamp_problem(stamp, roots)
            if problem:
                report.bad_stamp, report.problem = int(stamp["_id"]), problem
                break
            report.stamps += 1
            report.stamped_to, report.stamped_at = int(stamp["_id"]), stamp.get("gen_time")
        self._unstamped_since(report)
        return report

    def _stamp_problem(self, stamp: dict, roots: list | None) -> str | None:
        """What is wrong with one stamp (None: it proves its record's time)."""
        data = bytes(stamp.get("stamped") or b"")
        named = parse_stamped(data)
        rec = self.get(int(stamp["_id"]))
        if named is None or named != (int(stamp["_id"]), stamp.get("digest")):
            return "the stamped bytes were changed (they no longer name this stamp's record and digest)"
        if rec is None or rec.get("digest") != named[1]:
            return "the stamped digest is not the record's digest"
        token = bytes(stamp.get("token") or b"")
        if sha256_hex(token) != stamp.get("token_sha256"):
            return "timestamp token: its bytes differ from its recorded SHA-256 (the token was changed)"
        nonce = int(stamp["nonce"]) if str(stamp.get("nonce") or "").isdigit() else None
        problem = check_token(token, data, roots, nonce) or _facts_problem(stamp, token)
        return f"timestamp token: {problem}" if problem else None


def _facts_problem(stamp: dict, token: bytes) -> str | None:
    """The TSA time and serial shown from the stamp must be the token's own."""
    info = token_info(token)
    stored = stamp.get("gen_time")
    if not isinstance(stored, datetime) or _to_ms(stored) != _to_ms(info.gen_time):
        return "the stored TSA time differs from the token's"
    if str(stamp.get("serial")) != str(info.serial_number):
        return "the stored serial differs from the token's"
    return None


def _to_ms(t: datetime) -> datetime:
    """UTC, cut to the millisecond MongoDB keeps."""
    t = utc(t)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)
