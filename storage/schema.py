"""The one place for what every reader and writer of the database agrees on: ids, times, SimHash
signedness, match statuses and review actions, and the MongoDB indexes."""
from __future__ import annotations

import datetime as dt
import logging
from typing import Any, Iterable

import pymongo
from bson import ObjectId
from pymongo.errors import OperationFailure

log = logging.getLogger(__name__)

INT64_MAX = 2**63 - 1
MATCH_STATUSES = ("new", "confirmed", "dismissed", "licensed")
#: review action -> the status it sets ("reopen" is for scripts; the admin offers the other three)
REVIEW_ACTIONS = {"confirm": "confirmed", "dismiss": "dismissed", "license": "licensed", "reopen": "new"}

ASC, DESC = pymongo.ASCENDING, pymongo.DESCENDING
#: collection -> (keys, unique); unique ones must build, others may exist already under another name
INDEXES: dict[str, list[tuple[Any, bool]]] = {
    "pages": [("url", True), ("site", False), ("content_hash", False), ("fetched", False),
              ("undecided", False),   # kept while its dedup decision waits in a spool (maintenance.py)
              ("fp_version", False)],   # pages of another fingerprint version, re-fingerprinted (fpversion.py)
    "duplicates": [("url", True), ("original_id", False), ("site", False), ("fetched", False),
                   ("replaced_by_earlier", False)],   # displaced pages: their index entries (maintenance.py)
    "matches": [([("suspect_url", ASC), ("source_id", ASC)], True),
                ("status", False), ("site", False), ("source_id", False), ("created", False),
                # the admin's windowed list: {one equality field, a range on the sort field}
                ([("created", DESC)], False), ([("status", ASC), ("created", DESC)], False),
                ([("site", ASC), ("created", DESC)], False), ([("source_id", ASC), ("created", DESC)], False),
                ([("score", DESC)], False), ([("status", ASC), ("score", DESC)], False),
                ([("site", ASC), ("score", DESC)], False), ([("source_id", ASC), ("score", DESC)], False),
                ([("source_coverage", DESC)], False), ([("status", ASC), ("source_coverage", DESC)], False),
                ([("site", ASC), ("source_coverage", DESC)], False),
                ([("source_id", ASC), ("source_coverage", DESC)], False)],
    "runs": [([("spider", ASC), ("started", DESC)], False), ([("started", DESC)], False)],
    # what became of every URL a crawl touched: listed by run, outcome and reason, or looked up by URL
    "outcomes": [([("run", ASC), ("outcome", ASC), ("reason", ASC)], False), ([("url", ASC), ("at", DESC)], False)],
}
OUTCOMES = ("stored", "unchanged", "duplicate", "skipped", "failed")
#: indexes earlier versions made that no query reads (two on fields no page has): every save and displacement
#: paid for them (0.1-0.25 ms of SecantusDB CPU a saved page, 7-16%: bench_page_saves), so a store's open drops them
RETIRED_INDEXES: dict[str, tuple[str, ...]] = {"pages": ("canonical_url_1", "cluster_id_1", "run_id_1")}


def ensure_indexes(db: Any) -> None:
    """Create every index readers and writers rely on (idempotent): one command a collection (a store's open
    waits on it), one an index where the batch fails; then one listing of the pages' indexes, for retired ones."""
    for coll, specs in INDEXES.items():
        create_indexes(db[coll], specs)
    for coll, names in RETIRED_INDEXES.items():
        drop_retired(db[coll], names)


def drop_retired(collection: Any, names: Iterable[str]) -> None:
    """Drop the retired indexes a collection still has (one listing; another process may drop them first)."""
    for name in sorted(set(names) & set(collection.index_information())):
        try:
            collection.drop_index(name)
        except OperationFailure as e:   # gone meanwhile
            log.debug("retired index %s on %s not dropped: %s", name, collection.name, e)


def create_indexes(collection: Any, specs: Iterable[tuple[Any, bool]]) -> None:
    """Create `specs` ((keys, unique) pairs) on a collection in one round trip; when that fails (an
    equivalent index under another name), one by one: unique ones must build, the others may exist already."""
    specs = list(specs)
    try:
        collection.create_indexes([pymongo.IndexModel(keys, unique=unique) for keys, unique in specs])
        return
    except OperationFailure as e:
        log.debug("indexes on %s not created together: %s", collection.name, e)
    for keys, unique in specs:
        if unique:
            collection.create_index(keys, unique=True)
            continue
        try:
            collection.create_index(keys)
        except OperationFailure as e:  # an equivalent index with another name or options exists
            log.debug("index %s on %s not created: %s", keys, collection.name, e)


def counts_exactly(client: Any) -> bool:
    """Whether the server's `count` of a whole collection is exact: SecantusDB counts its rows (its buildInfo
    names it); a MongoDB reads metadata that an unclean shutdown can leave off."""
    return "secantusVersion" in client.admin.command("buildInfo")


def count_all(collection: Any, exact: bool) -> int:
    """Documents in a collection: the `count` command where it is exact (rows counted, none decoded: 0.13-0.17 s
    for 10,000 pages), else `count_documents`, whose aggregation SecantusDB answers by decoding every document
    (0.8-1.2 s for the same pages)."""
    return collection.estimated_document_count() if exact else collection.count_documents({})


def now() -> dt.datetime:
    """Timezone-aware UTC now (what every timestamp field holds)."""
    return dt.datetime.now(dt.timezone.utc)


def utc(v: dt.datetime) -> dt.datetime:
    """Aware UTC datetimes everywhere (the client is tz_aware; naive values count as UTC)."""
    return v.replace(tzinfo=dt.timezone.utc) if v.tzinfo is None else v.astimezone(dt.timezone.utc)


def to_date(value: Any) -> dt.datetime:
    """A datetime (UTC when naive) from a datetime, a date or an ISO string; ValueError otherwise."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    try:
        return to_date(dt.datetime.fromisoformat(str(value)))
    except ValueError:
        raise ValueError(f"not a date: {value!r} (use YYYY-MM-DD)") from None


def to_signed64(v: int) -> int:
    """Unsigned 64-bit SimHash -> signed int64 for MongoDB."""
    return v - 2**64 if v >= 2**63 else v


def to_unsigned64(v: int) -> int:
    """Signed int64 from MongoDB -> unsigned 64-bit SimHash."""
    return v + 2**64 if v < 0 else v


def new_id() -> str:
    """A fresh document id (ObjectId hex): unique across processes and ordered by creation time."""
    return str(ObjectId())


def is_oid_hex(v: Any) -> bool:
    """True for a 24-hex string, the form in which ObjectIds travel outside storage/."""
    return isinstance(v, str) and len(v) == 24 and ObjectId.is_valid(v)


def is_oid(v: Any) -> bool:
    """True for an ObjectId (so callers can print ids without importing bson)."""
    return isinstance(v, ObjectId)


def to_oid(doc_id: Any) -> Any:
    """A 24-hex id string as ObjectId; any other id unchanged."""
    return ObjectId(doc_id) if is_oid_hex(doc_id) else doc_id


def id_age_seconds(doc_id: Any) -> float | None:
    """Seconds since an ObjectId-style id was made, None for other ids."""
    if not is_oid_hex(doc_id):
        return None
    return (now() - ObjectId(doc_id).generation_time).total_seconds()


def any_id_form(ids: Iterable[Any]) -> list[Any]:
    """Ids as given plus their ObjectId forms, for `$in` queries over ids stored either way."""
    given = [i for i in ids if i is not None]
    return given + [ObjectId(i) for i in given if is_oid_hex(i)]


def cursor_id(token: dict) -> Any:
    """An _id back from its JSON form (see id_token)."""
    return ObjectId(token["o"]) if "o" in token else token["s"]


def id_token(doc_id: Any) -> dict:
    """An _id in a JSON-safe form that keeps whether it was an ObjectId."""
    return {"o": str(doc_id)} if isinstance(doc_id, ObjectId) else {"s": doc_id}
