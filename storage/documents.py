"""Checking documents before they reach MongoDB, and shaping them for callers afterwards."""
from __future__ import annotations

import logging
from typing import Any, Iterable

import bson
from pymongo.errors import BulkWriteError

from .errors import BadDocument
from .schema import to_unsigned64

log = logging.getLogger(__name__)

MAX_BSON = 16 * 1024 * 1024
SAFE_BSON = MAX_BSON - 64 * 1024


def out(doc: dict | None) -> dict | None:
    """A stored document as callers see it: string ids, unsigned SimHash, ints for DNA."""
    if doc is None:
        return None
    doc = dict(doc)
    doc["_id"] = str(doc["_id"])
    doc["id"] = doc["_id"]
    if isinstance(doc.get("simhash"), int):
        doc["simhash"] = to_unsigned64(doc["simhash"])
    if isinstance(doc.get("sketch"), list):
        doc["sketch"] = [to_unsigned64(v) for v in doc["sketch"]]
    if isinstance(doc.get("dna"), list):
        doc["dna"] = [int(x) if isinstance(x, str) else x for x in doc["dna"]]
    return doc


def insert_once(collection: Any, docs: list[dict]) -> None:
    """Insert documents whose ids were fixed before the first attempt; an id already there counts as done.

    The store itself retries a write whose reply was lost (the embedded server runs without retryable
    writes, storage.connection), so a second attempt may find the first attempt's documents."""
    if any("_id" not in d for d in docs):
        raise ValueError("insert_once needs every document's _id set before the first attempt")
    try:
        collection.insert_many(docs, ordered=False)
    except BulkWriteError as exc:
        if exc.details.get("writeConcernErrors") or any(
                e.get("code") != 11000 for e in exc.details.get("writeErrors", [])):
            raise


_NESTED = (dict, list, tuple)


def check_keys(doc: Any, path: str = "") -> None:
    """Refuse keys MongoDB cannot store safely (non-str, $-prefixed, NUL)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if not isinstance(key, str):
                raise BadDocument(f"field name {key!r} at {path or 'top level'} is not a string")
            if key.startswith("$") or "\0" in key or (key and "." in key):
                raise BadDocument(f"field name {key!r} at {path or 'top level'} contains '$', '.' or NUL")
            if isinstance(value, _NESTED):   # scalars hold no keys: no call (and no path) for each of them
                check_keys(value, f"{path}.{key}" if path else key)
    elif isinstance(doc, (list, tuple)):
        for i, value in enumerate(doc):
            if isinstance(value, _NESTED):
                check_keys(value, f"{path}[{i}]")


def check_text(doc: dict, fields: Iterable[str]) -> None:
    """Text must be valid Unicode that encodes as UTF-8 (no lone surrogates, no undecodable bytes)."""
    for f in fields:
        v = doc.get(f)
        if isinstance(v, bytes):
            try:
                doc[f] = v.decode("utf-8")
            except UnicodeDecodeError as e:
                raise BadDocument(f"field {f!r} is not valid UTF-8 (byte {e.start}); decode it first") from None
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                raise BadDocument(f"field {f!r} is not valid UTF-8 text (lone surrogate at character "
                                  f"{e.start}); nothing was stored") from None


def fit_bson(doc: dict, field: str = "text") -> dict:
    """Keep a document under MongoDB's 16 MB limit by truncating one text field, saying why."""
    try:
        size = len(bson.encode(doc))
    except bson.errors.InvalidDocument as e:
        raise BadDocument(f"document cannot be stored: {e}") from None
    if size <= SAFE_BSON:
        return doc
    text = doc.get(field)
    if not isinstance(text, str):
        raise BadDocument(f"document is {size} bytes, over MongoDB's 16 MB limit; nothing was stored")
    raw = text.encode("utf-8")
    keep = len(raw) - (size - SAFE_BSON) - 1024
    if keep <= 0:
        raise BadDocument(f"document is {size} bytes without its {field!r}; over MongoDB's 16 MB limit")
    doc = dict(doc)
    doc[field] = raw[:keep].decode("utf-8", "ignore")
    doc["truncated"] = {"field": field, "original_chars": len(text), "kept_chars": len(doc[field]),
                        "reason": f"document was {size} bytes, over MongoDB's 16 MB limit"}
    log.warning("page %s: %s truncated from %d to %d characters (16 MB limit)", doc.get("url"), field,
                len(text), len(doc[field]))
    return doc
