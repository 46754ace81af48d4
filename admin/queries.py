"""The admin's side of queries: turning request arguments into a storage MatchQuery (or a BadFilter
a person can act on), and the dashboard's stale-while-revalidate cache. Every database access is in
storage/ (storage/matches.py, storage/matchlist.py)."""
from __future__ import annotations

import math
import re
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Mapping

from storage.matchlist import SORTS, BadCursor, MatchQuery, decode_cursor
from storage.schema import MATCH_STATUSES as STATUSES
from storage.schema import REVIEW_ACTIONS, is_oid

__all__ = ["ACTIONS", "STATUSES", "SORTS", "MAX_OFFSET", "BadFilter", "MatchQuery", "parse_match_query",
           "TTLCache"]

#: the review actions the admin offers (storage also knows "reopen", for scripts)
ACTIONS = {a: s for a, s in REVIEW_ACTIONS.items() if a != "reopen"}
MAX_OFFSET = 10_000          # page numbers deeper than this must use the "next" cursor
DATE_MIN = datetime(1990, 1, 1, tzinfo=timezone.utc)    # no match is older than the crawler
DATE_MAX = datetime(2199, 12, 31, tzinfo=timezone.utc)  # far enough; date + 1 day never overflows
DIGITS = re.compile(r"[0-9]{1,12}")  # ASCII only: str.isdigit() also says yes to '²' and '①'


class BadFilter(ValueError):
    """A filter, sort, cursor or page the user gave that we refuse with a clear message."""


# ---------------------------------------------------------------- filters

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
        val = datetime.strptime(raw, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        raise BadFilter(f"{name} must be a date like 2026-01-31, got {raw[:40]!r}") from None
    if not DATE_MIN <= val <= DATE_MAX:
        raise BadFilter(f"{name} must be between {DATE_MIN:%Y-%m-%d} and {DATE_MAX:%Y-%m-%d}")
    return val


def int_arg(args: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    """A whole-number query argument in [lo, hi] (ASCII digits only); BadFilter says what is wrong."""
    raw = (args.get(name) or "").strip()
    if not raw:
        return default
    if not DIGITS.fullmatch(raw):
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
        site_like=(args.get("site") or "").strip()[:200],   # a part of the host is enough
        q=(args.get("q") or "").strip()[:200],
        source=(args.get("source") or "").strip()[:200],
        score_min=_float_arg(args, "score_min"), score_max=_float_arg(args, "score_max"),
        date_from=_date_arg(args, "date_from"), date_to=_date_arg(args, "date_to"),
        sort=sort,
        per_page=int_arg(args, "per_page", per_page, 1, 500),
    )
    mq.page = int_arg(args, "page", 1, 1, 10**12)
    if (mq.page - 1) * mq.per_page > MAX_OFFSET:
        raise BadFilter(f"page {mq.page} is too deep; follow the 'Next' links (cursor paging) instead")
    if args.get("after"):
        mq.after = _cursor_arg(args["after"], SORTS[sort][0])
    mq.args = {k: str(v) for k, v in args.items()
               if k in ("q", "status", "site", "source", "score_min", "score_max", "date_from",
                        "date_to", "sort", "per_page") and v}
    return mq


def _cursor_arg(token: str, sort_field: str) -> tuple[Any, Any]:
    """A cursor this app could have made: finite scores in [0, 1], dates in range, a short id."""
    if len(token) > 500:
        raise BadFilter("the 'after' cursor is not valid; start from the first page")
    try:
        value, _id = decode_cursor(token, sort_field)
    except BadCursor as exc:
        raise BadFilter(str(exc)) from None
    if isinstance(value, bool) or (isinstance(value, float) and not math.isfinite(value)):
        raise BadFilter("the 'after' cursor is not valid; start from the first page")
    if isinstance(value, (int, float)) and not -1.0 <= value <= 2.0:
        raise BadFilter("the 'after' cursor is not valid; start from the first page")
    if isinstance(value, datetime) and not DATE_MIN - timedelta(days=1) <= value <= DATE_MAX:
        raise BadFilter("the 'after' cursor is not valid; start from the first page")
    if not (isinstance(_id, str) or is_oid(_id)) or len(str(_id)) > 200:
        raise BadFilter("the 'after' cursor is not valid; start from the first page")
    return value, _id


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
        """The cached value (None if the first computation is still running after `wait` s; a request
        that finds it already running does not wait again)."""
        if ttl <= 0:
            return compute()
        with self._lock:
            hit = self._data.get(key)
        if hit and time.monotonic() - hit[0] < ttl:
            return hit[1]
        with self._lock:
            waited = key in self._running   # an earlier request already waited for this computation
        th = self._refresh(key, compute)
        if hit:
            return hit[1]
        th.join(0 if waited else wait)
        with self._lock:
            hit = self._data.get(key)
        return hit[1] if hit else None

    def update(self, key: str, change: Callable[[Any], None]) -> None:
        """Apply a known change to a cached value in place (a review moves a count at once)."""
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                change(hit[1])

    def forget(self, prefix: str) -> None:
        """Drop the values whose key starts with prefix (list totals after a review)."""
        with self._lock:
            for key in [k for k in self._data if k.startswith(prefix)]:
                del self._data[key]

    def clear(self) -> None:
        """Forget every value (tests, after imports)."""
        with self._lock:
            self._data.clear()
