"""Admin-only reads on top of ``store.db``: the fast matches list, exports, dashboard numbers,
duplicate clusters, site licences, and the 'license' review the store does not know yet.

The matches list never asks the database for a whole-collection sort or count. It pages by key
(sort field + _id, an opaque cursor), and finds each page by scanning the sort field in consecutive
windows (the newest ten minutes, then a window sized from the density seen so far, ...). Each query
is {one equality filter, a range on the sort field}, served by one compound index on MongoDB and on
the embedded SecantusDB (which sorts in memory, so bounded candidate sets matter); the remaining
filters are applied to the fetched documents. Dashboard aggregations are cached and recomputed in
a background thread.
"""
from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterator, Mapping

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import OperationFailure

STATUSES = ("new", "confirmed", "dismissed", "licensed")
ACTIONS = {"confirm": "confirmed", "dismiss": "dismissed", "license": "licensed"}
SORTS: dict[str, tuple[str, int]] = {
    "newest": ("created", DESCENDING), "oldest": ("created", ASCENDING),
    "score": ("score", DESCENDING), "score_asc": ("score", ASCENDING),
}
MAX_OFFSET = 10_000          # page numbers deeper than this must use the "next" cursor
EXPORT_MAX = 100_000
DATE_FLOOR = datetime(1990, 1, 1, tzinfo=timezone.utc)

INDEXES = [
    [("created", DESCENDING)],
    [("status", ASCENDING), ("created", DESCENDING)],
    [("site", ASCENDING), ("created", DESCENDING)],
    [("source_id", ASCENDING), ("created", DESCENDING)],
    [("score", DESCENDING)],
    [("status", ASCENDING), ("score", DESCENDING)],
    [("site", ASCENDING), ("score", DESCENDING)],
    [("source_id", ASCENDING), ("score", DESCENDING)],
]


def utc(v: datetime) -> datetime:
    """Aware UTC datetimes everywhere (the store's client is tz_aware; naive values count as UTC)."""
    return v.replace(tzinfo=timezone.utc) if v.tzinfo is None else v.astimezone(timezone.utc)


class BadFilter(ValueError):
    """A filter, sort, cursor or page the user gave that we refuse with a clear message."""


def ensure_indexes(db: Any) -> None:
    """Create the indexes the matches list and dashboard rely on (idempotent)."""
    for keys in INDEXES:
        try:
            db.matches.create_index(keys)
        except OperationFailure:
            pass  # an equivalent index with another name or options exists already
    for coll, keys in (("duplicates", [("original_id", ASCENDING)]), ("runs", [("started", DESCENDING)])):
        try:
            db[coll].create_index(keys)
        except OperationFailure:
            pass


# ---------------------------------------------------------------- filters

@dataclass
class MatchQuery:
    """A validated matches-list request: filters, sort, and where the page starts."""

    status: str = ""
    site: str = ""
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


def _float_arg(args: Mapping[str, str], name: str) -> float | None:
    raw = (args.get(name) or "").strip()
    if not raw:
        return None
    try:
        val = float(raw)
    except ValueError:
        raise BadFilter(f"{name} must be a number, got {raw[:40]!r}") from None
    if not (-1e9 < val < 1e9):
        raise BadFilter(f"{name} is out of range")
    return val


def _date_arg(args: Mapping[str, str], name: str) -> datetime | None:
    raw = (args.get(name) or "").strip()
    if not raw:
        return None
    try:
        return datetime.strptime(raw, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        raise BadFilter(f"{name} must be a date like 2026-01-31, got {raw[:40]!r}") from None


def _int_arg(args: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = (args.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit() or len(raw) > 12:
        raise BadFilter(f"{name} must be a positive whole number")
    val = int(raw)
    if not lo <= val <= hi:
        raise BadFilter(f"{name} must be between {lo} and {hi}")
    return val


def parse_match_query(args: Mapping[str, str], per_page: int = 50) -> MatchQuery:
    """Validate query-string filters; raise BadFilter with a message a person can act on."""
    status = (args.get("status") or "").strip()
    if status and status not in STATUSES:
        raise BadFilter(f"status must be one of {', '.join(STATUSES)}")
    sort = (args.get("sort") or "newest").strip()
    if sort not in SORTS:
        raise BadFilter(f"sort must be one of {', '.join(SORTS)}")
    mq = MatchQuery(
        status=status,
        site=(args.get("site") or "").strip()[:200],
        source=(args.get("source") or "").strip()[:200],
        score_min=_float_arg(args, "score_min"), score_max=_float_arg(args, "score_max"),
        date_from=_date_arg(args, "date_from"), date_to=_date_arg(args, "date_to"),
        sort=sort,
        per_page=_int_arg(args, "per_page", per_page, 1, 500),
    )
    mq.page = _int_arg(args, "page", 1, 1, 10**12)
    if (mq.page - 1) * mq.per_page > MAX_OFFSET:
        raise BadFilter(f"page {mq.page} is too deep; follow the 'Next' links (cursor paging) instead")
    if args.get("after"):
        mq.after = decode_cursor(args["after"], SORTS[sort][0])
    mq.args = {k: str(v) for k, v in args.items()
               if k in ("status", "site", "source", "score_min", "score_max", "date_from",
                        "date_to", "sort", "per_page") and v}
    return mq


# ---------------------------------------------------------------- cursors

def encode_cursor(value: Any, _id: Any) -> str:
    """Opaque, URL-safe position after which the next page starts."""
    if isinstance(value, datetime):
        v: Any = {"d": utc(value).isoformat()}
    else:
        v = {"n": value}
    i = {"o": str(_id)} if isinstance(_id, ObjectId) else {"s": _id}
    raw = json.dumps([v, i], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(token: str, sort_field: str) -> tuple[Any, Any]:
    """Inverse of encode_cursor; anything malformed is a BadFilter, never a crash."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        v, i = json.loads(raw)
        value = utc(datetime.fromisoformat(v["d"])) if "d" in v else v["n"]
        _id = ObjectId(i["o"]) if "o" in i else i["s"]
        if sort_field == "created" and not isinstance(value, datetime):
            raise ValueError
        if sort_field == "score" and not isinstance(value, (int, float)):
            raise ValueError
        return value, _id
    except Exception:
        raise BadFilter("the 'after' cursor is not valid; start from the first page") from None


# ---------------------------------------------------------------- the list

EQ_FIELDS = (("source", "source_id"), ("site", "site"), ("status", "status"))  # most selective first
PROJECTED = ("_id", "status", "site", "source_id", "score", "created")


def _range_of(mq: MatchQuery, sort_field: str) -> tuple[Any, Any]:
    """The user's own (low, high) bounds on the sort field, None where open; high is exclusive
    for dates (the whole last day included) and inclusive for scores."""
    if sort_field == "created":
        hi = mq.date_to + timedelta(days=1) if mq.date_to else None
        return mq.date_from, hi
    return mq.score_min, mq.score_max


def accepts(mq: MatchQuery, doc: dict) -> bool:
    """Whether a fetched document passes every filter of the request (residual filtering)."""
    for arg, fld in EQ_FIELDS:
        want = getattr(mq, arg)
        if want and doc.get(fld) != want:
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
        self.residual = sum(bool(getattr(mq, a)) for a, _ in EQ_FIELDS) > 1 or bool(
            self._other_ranges())
        self.projection = None if projection is None else {**projection, **{f: 1 for f in PROJECTED}}
        self.order = [(self.sort_field, self.direction), ("_id", self.direction)]

    def _other_ranges(self) -> bool:
        other = "score" if self.sort_field == "created" else "created"
        if other == "score":
            return self.mq.score_min is not None or self.mq.score_max is not None
        return bool(self.mq.date_from or self.mq.date_to)

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


def find_matches(db: Any, mq: MatchQuery, projection: dict | None = None) -> tuple[list[dict], str | None]:
    """One page of matches in the requested order and the cursor of the next page (or None)."""
    scan = _Scan(db.matches, mq, projection)
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
    return (0, str(i)) if isinstance(i, ObjectId) else (1, str(i))


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


def iter_match_batches(db: Any, mq: MatchQuery, limit: int = EXPORT_MAX,
                       batch: int = 500) -> Iterator[list[dict]]:
    """Every match of a filter in order, a batch at a time by cursor (exports, CLI listing)."""
    cur = MatchQuery(**{**mq.__dict__, "page": 1, "per_page": batch, "after": mq.after})
    sent = 0
    while sent < limit:
        docs, nxt = find_matches(db, cur)
        if docs[: limit - sent]:
            yield docs[: limit - sent]
        sent += len(docs)
        if not nxt:
            return
        cur.after = decode_cursor(nxt, SORTS[cur.sort][0])


def iter_matches(db: Any, mq: MatchQuery, limit: int = EXPORT_MAX, batch: int = 500) -> Iterator[dict]:
    """Every match of a filter in order, one by one."""
    for docs in iter_match_batches(db, mq, limit, batch):
        yield from docs


def page_texts(db: Any, page_ids: list[Any]) -> dict[str, str]:
    """Texts of many stored pages in one query, keyed by str(id)."""
    ids = [i for i in page_ids if i is not None]
    ids += [ObjectId(i) for i in ids if isinstance(i, str) and ObjectId.is_valid(i) and len(i) == 24]
    if not ids:
        return {}
    return {str(p["_id"]): str(p.get("text") or "") for p in db.pages.find({"_id": {"$in": ids}}, {"text": 1})}


# ---------------------------------------------------------------- cache

class TTLCache:
    """Per-process cache for the expensive dashboard numbers: fresh values are served as they are,
    stale ones are served while one background thread recomputes them (so the page never waits for
    an aggregation over the whole collection), and the first computation is waited for up to `wait`
    seconds. ttl <= 0 computes synchronously every time (tests)."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[float, Any]] = {}
        self._running: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def _refresh(self, key: str, compute: Callable[[], Any]) -> threading.Thread:
        def work() -> None:
            try:
                val = compute()
                with self._lock:
                    self._data[key] = (time.monotonic(), val)
            finally:
                with self._lock:
                    self._running.pop(key, None)

        with self._lock:
            th = self._running.get(key)
            if th is None:
                th = self._running[key] = threading.Thread(target=work, name=f"admin-cache-{key}", daemon=True)
                th.start()
        return th

    def get(self, key: str, ttl: float, compute: Callable[[], Any], wait: float = 3.0) -> Any:
        """The cached value (None if the first computation is still running after `wait` s)."""
        if ttl <= 0:
            return compute()
        with self._lock:
            hit = self._data.get(key)
        if hit and time.monotonic() - hit[0] < ttl:
            return hit[1]
        th = self._refresh(key, compute)
        if hit:
            return hit[1]
        th.join(wait)
        with self._lock:
            hit = self._data.get(key)
        return hit[1] if hit else None

    def clear(self) -> None:
        """Forget every value (tests, after imports)."""
        with self._lock:
            self._data.clear()


# ---------------------------------------------------------------- dashboard

def dashboard_counts(db: Any) -> dict[str, int]:
    """Pages kept, copies dropped as duplicates, crawled in all, and matches per status."""
    kept = db.pages.estimated_document_count()
    dropped = db.duplicates.estimated_document_count()
    out = {"pages_crawled": kept + dropped, "pages_kept": kept, "pages_duplicates": dropped}
    by_status = {r["_id"]: r["n"] for r in db.matches.aggregate([{"$group": {"_id": "$status", "n": {"$sum": 1}}}])}
    for s in STATUSES:
        out[f"matches_{s}"] = by_status.get(s, 0)
    out["matches_total"] = sum(by_status.values())
    return out


def dashboard_stats(db: Any) -> dict[str, Any]:
    """Everything the dashboard aggregates, computed in one go (it runs in the background)."""
    days, series = matches_per_day(db)
    return {"counts": dashboard_counts(db), "days": days, "series": series, "sites": top_sites(db),
            "as_of": datetime.now(timezone.utc)}


def recent_runs(db: Any, n: int = 10) -> list[dict]:
    """The latest crawl runs with their counters."""
    return list(db.runs.find({}).sort("started", DESCENDING).limit(n))


def matches_per_day(db: Any, days: int = 30, top: int = 5,
                    now: datetime | None = None) -> tuple[list[str], dict[str, list[int]]]:
    """Match counts per day for the busiest sites (the rest summed as 'other') over recent days."""
    now = utc(now) if now else datetime.now(timezone.utc)
    start = (now - timedelta(days=days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    day_keys = [(start + timedelta(days=i)).strftime("%Y-%m-%d") for i in range(days)]
    counts: dict[str, dict[str, int]] = {}
    for d in db.matches.find({"created": {"$gte": start}}, {"site": 1, "created": 1, "_id": 0}):
        c = d.get("created")
        if not isinstance(c, datetime):
            continue
        site = str(d.get("site") or "?")
        day = utc(c).strftime("%Y-%m-%d")
        counts.setdefault(site, {}).setdefault(day, 0)
        counts[site][day] += 1
    ranked = sorted(counts, key=lambda s: -sum(counts[s].values()))
    series = {s: [counts[s].get(k, 0) for k in day_keys] for s in ranked[:top]}
    rest = ranked[top:]
    if rest:
        series["other"] = [sum(counts[s].get(k, 0) for s in rest) for k in day_keys]
    return day_keys, series


def top_sites(db: Any, n: int = 10) -> list[dict]:
    """Sites with the most open or confirmed matches."""
    pipeline = [
        {"$match": {"status": {"$in": ["new", "confirmed"]}}},
        {"$group": {"_id": "$site", "matches": {"$sum": 1},
                    "confirmed": {"$sum": {"$cond": [{"$eq": ["$status", "confirmed"]}, 1, 0]}}}},
        {"$sort": {"matches": -1, "_id": 1}},
        {"$limit": n},
    ]
    return [{"site": r["_id"], "matches": r["matches"], "confirmed": r["confirmed"]}
            for r in db.matches.aggregate(pipeline)]


# ---------------------------------------------------------------- duplicates

def duplicate_clusters(db: Any, q: str = "", page: int = 1, per_page: int = 20) -> tuple[list[dict], bool]:
    """Near-duplicate clusters: each original with its copies and distances, newest first."""
    match: dict[str, Any] = {}
    if q:
        rx = {"$regex": re.escape(q[:200]), "$options": "i"}
        match = {"$or": [{"url": rx}, {"title": rx}, {"original_url": rx}, {"site": rx}]}
    pipeline: list[dict] = [
        {"$match": match},
        {"$sort": {"distance": 1}},
        {"$group": {"_id": "$original_id", "original_url": {"$first": "$original_url"},
                    "copies": {"$push": {"url": "$url", "distance": "$distance", "method": "$method",
                                         "site": "$site", "title": "$title", "fetched": "$fetched"}},
                    "n": {"$sum": 1}, "last": {"$max": "$fetched"}}},
        {"$sort": {"last": -1, "_id": 1}},
        {"$skip": (page - 1) * per_page},
        {"$limit": per_page + 1},
    ]
    clusters = list(db.duplicates.aggregate(pipeline))
    more = len(clusters) > per_page
    clusters = clusters[:per_page]
    ids = [c["_id"] for c in clusters if c["_id"] is not None]
    ids += [ObjectId(i) for i in ids if isinstance(i, str) and ObjectId.is_valid(i) and len(i) == 24]
    originals = {str(p["_id"]): p for p in db.pages.find({"_id": {"$in": ids}}, {"title": 1, "url": 1, "site": 1})}
    for c in clusters:
        orig = originals.get(str(c["_id"])) or {}
        c["original_title"] = orig.get("title", "")
        c["original_url"] = c.get("original_url") or orig.get("url", "")
    return clusters, more


# ---------------------------------------------------------------- licences

def record_site_licence(db: Any, site: str, source_id: str, reviewer: str, note: str) -> None:
    """Remember that `site` is licensed for `source_id` (collection `licenses`)."""
    now = datetime.now(timezone.utc)
    db.licenses.update_one(
        {"_id": f"{source_id}|{site}"},
        {"$set": {"site": site, "source_id": source_id, "reviewer": reviewer, "note": note, "at": now}},
        upsert=True,
    )


def open_matches_of_site(db: Any, site: str, source_id: str, limit: int = 10_000) -> list[Any]:
    """Ids of the not-yet-licensed matches of one source on one site."""
    docs = db.matches.find({"site": site, "source_id": source_id, "status": {"$ne": "licensed"}},
                           {"_id": 1}).limit(limit)
    return [d["_id"] for d in docs]


# ---------------------------------------------------------------- reviews

def apply_review(store: Any, match_id: str, action: str, reviewer: str, note: str) -> dict | None:
    """Record a review through store.review_match; 'license' (which the store may not know yet) is
    written the same way here: status, reviewer, note, and a history entry with the time."""
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}")
    try:
        return store.review_match(match_id, action, reviewer, note)
    except ValueError:
        if action != "license":
            raise
    at = datetime.now(timezone.utc)
    oid = ObjectId(match_id) if ObjectId.is_valid(match_id) and len(match_id) == 24 else match_id
    store.db.matches.update_one(
        {"_id": oid},
        {"$set": {"status": "licensed", "reviewer": reviewer, "note": note, "reviewed": at},
         "$push": {"history": {"action": action, "reviewer": reviewer, "note": note, "at": at}}})
    return store.get_match(match_id)
