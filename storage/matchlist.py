"""The matches list without whole-collection sorts or counts: key paging and windowed scans.

A page is found by scanning the sort field in consecutive windows (the newest ten minutes, then a
window sized from the density seen so far, ...) and is continued by an opaque cursor (sort value +
_id). Each query is {one equality filter, a range on the sort field}, served by one compound index
(storage/schema.py INDEXES) on MongoDB and on the embedded SecantusDB (which sorts in memory, so
bounded candidate sets matter); the remaining filters are applied to the fetched documents.
"""
from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from pymongo import ASCENDING, DESCENDING

from .schema import cursor_id, id_token, is_oid, utc

SORTS: dict[str, tuple[str, int]] = {
    "newest": ("created", DESCENDING), "oldest": ("created", ASCENDING),
    "score": ("score", DESCENDING), "score_asc": ("score", ASCENDING),
    "coverage": ("source_coverage", DESCENDING), "coverage_asc": ("source_coverage", ASCENDING),
}
#: fields `q` searches by substring (case-insensitive): the page's title and URL, the work's title and id
Q_FIELDS = ("title", "suspect_url", "source_title", "source_id")
DATE_FLOOR = datetime(1990, 1, 1, tzinfo=timezone.utc)


class BadCursor(ValueError):
    """A paging cursor that this module did not make (edited, truncated, from another sort)."""


@dataclass
class MatchQuery:
    """A validated matches-list request: filters, sort, and where the page starts."""

    status: str = ""
    site: str = ""           # exact site (host[:port])
    site_like: str = ""      # a substring of the site, case-insensitive (the admin's "site" box)
    q: str = ""              # a substring of the title, URL or work (Q_FIELDS), case-insensitive
    source: str = ""
    score_min: float | None = None
    score_max: float | None = None
    date_from: datetime | None = None
    date_to: datetime | None = None
    sort: str = "newest"
    page: int = 1
    per_page: int = 50
    after: tuple[Any, Any] | None = None
    args: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- cursors

def encode_cursor(value: Any, _id: Any) -> str:
    """Opaque, URL-safe position after which the next page starts."""
    if isinstance(value, datetime):
        v: Any = {"d": utc(value).isoformat()}
    else:
        v = {"n": value}
    i = id_token(_id)
    raw = json.dumps([v, i], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(token: str, sort_field: str) -> tuple[Any, Any]:
    """Inverse of encode_cursor; anything malformed is a BadCursor, never a crash."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        v, i = json.loads(raw)
        value = utc(datetime.fromisoformat(v["d"])) if "d" in v else v["n"]
        _id = cursor_id(i)
        if sort_field == "created" and not isinstance(value, datetime):
            raise ValueError
        if sort_field != "created" and not isinstance(value, (int, float)):
            raise ValueError
        return value, _id
    except Exception:
        raise BadCursor("the 'after' cursor is not valid; start from the first page") from None


# ---------------------------------------------------------------- the list

EQ_FIELDS = (("source", "source_id"), ("site", "site"), ("status", "status"))  # most selective first
PROJECTED = ("_id", "status", "site", "source_id", "score", "created")


def _range_of(mq: MatchQuery, sort_field: str) -> tuple[Any, Any]:
    """The user's own (low, high) bounds on the sort field, None where open; high is exclusive
    for dates (the whole last day included) and inclusive for scores."""
    if sort_field == "created":
        hi = mq.date_to + timedelta(days=1) if mq.date_to else None
        return mq.date_from, hi
    if sort_field == "score":
        return mq.score_min, mq.score_max
    return None, None


def _substring(text: str) -> dict[str, Any]:
    """A case-insensitive substring condition (the text is escaped: never a user-written pattern)."""
    return {"$regex": re.escape(text[:200]), "$options": "i"}


def text_filter(mq: MatchQuery) -> dict[str, Any]:
    """The substring conditions of a request (site_like, q) as a MongoDB filter ({} without them), for
    counting; the list itself matches them in Python (accepts)."""
    cond: dict[str, Any] = {}
    if mq.site_like:
        cond["site"] = _substring(mq.site_like)
    if mq.q:
        cond["$or"] = [{f: _substring(mq.q)} for f in Q_FIELDS]
    return cond


def count_filter(mq: MatchQuery) -> dict[str, Any]:
    """Every filter of a request as one MongoDB filter, for the list's total count."""
    cond: dict[str, Any] = {fld: getattr(mq, arg) for arg, fld in EQ_FIELDS if getattr(mq, arg)}
    if mq.site and mq.site_like:
        cond["$and"] = [{"site": mq.site}, {"site": _substring(mq.site_like)}]
        cond.pop("site")
        cond.update({k: v for k, v in text_filter(mq).items() if k != "site"})
    else:
        cond.update(text_filter(mq))
    if mq.score_min is not None or mq.score_max is not None:
        cond["score"] = {k: v for k, v in (("$gte", mq.score_min), ("$lte", mq.score_max)) if v is not None}
    if mq.date_from or mq.date_to:
        lo, hi = _range_of(mq, "created")
        cond["created"] = {k: v for k, v in (("$gte", lo), ("$lt", hi)) if v is not None}
    return cond


def _has(doc: dict, field: str, text: str) -> bool:
    return text.casefold() in str(doc.get(field) or "").casefold()


def accepts(mq: MatchQuery, doc: dict) -> bool:
    """Whether a fetched document passes every filter of the request (residual filtering)."""
    for arg, fld in EQ_FIELDS:
        want = getattr(mq, arg)
        if want and doc.get(fld) != want:
            return False
    if mq.site_like and not _has(doc, "site", mq.site_like):
        return False
    if mq.q and not any(_has(doc, f, mq.q) for f in Q_FIELDS):
        return False
    score = doc.get("score")
    if mq.score_min is not None or mq.score_max is not None:
        if not isinstance(score, (int, float)) or isinstance(score, bool):
            return False
        if (mq.score_min is not None and score < mq.score_min) or \
                (mq.score_max is not None and score > mq.score_max):
            return False
    if mq.date_from or mq.date_to:
        c = doc.get("created")
        if not isinstance(c, datetime):
            return False
        c = utc(c)
        if (mq.date_from and c < mq.date_from) or (mq.date_to and c >= mq.date_to + timedelta(days=1)):
            return False
    return True


class _Scan:
    """Walks the sort field in consecutive windows (newest first, say: the last hour, then the hour
    before...), growing each window from what the previous one yielded, until enough documents pass
    the filter. Each query is {one equality field, sort-field range}, which both MongoDB and the
    embedded SecantusDB answer from one compound index; the other filters are applied here."""

    def __init__(self, coll: Any, mq: MatchQuery, projection: dict | None) -> None:
        self.coll, self.mq = coll, mq
        self.sort_field, self.direction = SORTS[mq.sort]
        self.eq = next(((fld, getattr(mq, arg)) for arg, fld in EQ_FIELDS if getattr(mq, arg)), None)
        # substrings (q, site_like) are matched here, in Python: the window queries stay {one equality
        # field, a range on the sort field}, which the index serves; a regex would scan the collection
        self.residual = sum(bool(getattr(mq, a)) for a, _ in EQ_FIELDS) > 1 or bool(
            self._other_ranges()) or bool(mq.q or mq.site_like)
        self.projection = None if projection is None else {**projection, **{f: 1 for f in PROJECTED + Q_FIELDS}}
        self.order = [(self.sort_field, self.direction), ("_id", self.direction)]

    def _other_ranges(self) -> bool:
        scores = self.sort_field != "score" and (self.mq.score_min is not None or self.mq.score_max is not None)
        return scores or (self.sort_field != "created" and bool(self.mq.date_from or self.mq.date_to))

    def _query(self, cond: dict[str, Any]) -> dict[str, Any]:
        q: dict[str, Any] = {self.eq[0]: self.eq[1]} if self.eq else {}
        if cond:
            q[self.sort_field] = cond
        return q

    def fetch(self, cond: dict[str, Any], need: int) -> list[dict]:
        """Documents passing the whole filter among those in one window, in order, at most `need`."""
        cur = self.coll.find(self._query(cond), self.projection).sort(self.order)
        if not self.residual:
            return list(cur.limit(need))
        out = []
        for d in cur:
            if accepts(self.mq, d):
                out.append(d)
                if len(out) >= need:
                    break
        cur.close()
        return out

    def run(self, need: int, start: Any = None, inclusive: bool = False) -> list[dict]:
        """`need` documents from `start` (exclusive unless inclusive; None = the very top) on."""
        desc = self.direction == DESCENDING
        lo, hi = _range_of(self.mq, self.sort_field)
        if self.sort_field == "score" and hi is not None:
            hi_op = "$lte"
        else:
            hi_op = "$lt"
        bound_far = lo if desc else hi           # where the user's range ends, in scan direction
        edge = start if start is not None else (hi if desc else lo)
        edge_op = ("$lte" if inclusive else "$lt") if desc else ("$gte" if inclusive else "$gt")
        if start is None:
            edge_op = hi_op if desc else "$gte"
        if edge is None:
            edge = _start_anchor(self.sort_field, self.direction)
            edge_open = True                      # no bound at the top: take everything above too
        else:
            edge_open = False
        width: Any = timedelta(minutes=10) if self.sort_field == "created" else 0.001
        got: list[dict] = []
        spanned: Any = width * 0
        while len(got) < need:
            far = edge - width if desc else edge + width
            final = self._past_floor(far) or (bound_far is not None and (far <= bound_far if desc else far >= bound_far))
            cond: dict[str, Any] = {}
            if not edge_open:
                cond[edge_op] = edge
            if final:
                if bound_far is not None:
                    cond["$gte" if desc else (hi_op if self.sort_field == "score" else "$lt")] = bound_far
            else:
                cond["$gte" if desc else "$lt"] = far
            batch = self.fetch(cond, need - len(got))
            got += batch
            if final:
                break
            spanned += width
            edge, edge_op, edge_open = far, ("$lt" if desc else "$gte"), False
            # size the next window from the density seen so far (x8 while nothing was found)
            want = spanned * 8 if not got else spanned * (1.25 * (need - len(got)) / len(got))
            width = max(width * 2, min(want, width * 16))
        return got

    def _past_floor(self, far: Any) -> bool:
        if self.sort_field == "created":
            return far < DATE_FLOOR or far > datetime.now(timezone.utc) + timedelta(days=3650)
        return far < -1.0 or far > 2.0


def _start_anchor(sort_field: str, direction: int) -> Any:
    if sort_field == "created":
        if direction == DESCENDING:
            return datetime.now(timezone.utc) + timedelta(minutes=1)  # first window is open above
        return DATE_FLOOR
    return 1.0 if direction == DESCENDING else 0.0


def find_matches(coll: Any, mq: MatchQuery, projection: dict | None = None) -> tuple[list[dict], str | None]:
    """One page of a matches collection in the requested order and the cursor of the next page (or None)."""
    scan = _Scan(coll, mq, projection)
    offset = 0 if mq.after else (mq.page - 1) * mq.per_page
    need = offset + mq.per_page + 1
    if mq.after:
        value, _id = mq.after
        docs = _after(scan, value, _id, need)
    else:
        docs = scan.run(need)
    page = docs[offset:offset + mq.per_page]
    more = len(docs) > offset + mq.per_page
    nxt = encode_cursor(page[-1].get(scan.sort_field), page[-1]["_id"]) if more and page else None
    return page, nxt


def _key(i: Any) -> tuple[int, str]:
    """Comparable _id (ObjectIds and strings never compare directly in Python)."""
    return (0, str(i)) if is_oid(i) else (1, str(i))


def _after(scan: _Scan, value: Any, _id: Any, need: int) -> list[dict]:
    """The documents after a cursor: ties on the sort value with a later _id, then the rest."""
    q = scan._query({})
    q[scan.sort_field] = value  # bare equality: served by the (field, sort field) compound index
    later = (lambda i: _key(i) < _key(_id)) if scan.direction == DESCENDING else (lambda i: _key(i) > _key(_id))
    ties = [d for d in scan.coll.find(q, scan.projection).sort("_id", scan.direction)
            if later(d["_id"]) and accepts(scan.mq, d)][:need]
    if len(ties) >= need:
        return ties
    return ties + scan.run(need - len(ties), value)
