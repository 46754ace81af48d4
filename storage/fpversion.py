"""Fingerprint versions: pages fingerprinted by another version are fingerprinted again from their text.

Every page carries the `fp_version` its SimHash, sketch and DNA were computed with (FingerprintPipeline).
A new version (fingerprint/version.py: a table, the tokenizer, the thesaurus, or ZHDEDUP_SYNONYMS turned
on or off) makes those stale: a SimHash of one version is no neighbour of the same text's SimHash of
another. So when the store opens, pages of another version are re-fingerprinted from their stored text
(content hash, SimHash, sketch, DNA, length, fp_version), then the Redis index and the sources' seeds are
rebuilt from MongoDB. Pages without `fp_version` (written by hand, not by a crawl) are left as they are.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from pymongo import UpdateOne

from fingerprint.document import fingerprint_text
from fingerprint.neardup import NearDupParams
from fingerprint.synonyms import enabled
from fingerprint.version import fingerprint_version

from .errors import mask_credentials
from .schema import to_signed64

log = logging.getLogger(__name__)


def current_version() -> str:
    """The version this process fingerprints with (synonym canonicalisation on or off)."""
    return fingerprint_version(enabled())


def outdated(version: str) -> list[dict]:
    """Filters of the pages fingerprinted by a version other than `version` (pages without one are not ours to
    redo): the versions sorting before it and after it, two ranges of the fp_version index, strings only (type
    bracketing). The one filter `{"$type": "string", "$ne": version}` made SecantusDB read every page (1.1 s
    for 10,000) each time a store opened."""
    return [{"fp_version": {"$lt": version}}, {"fp_version": {"$gte": version + "\x00"}}]   # + NUL: the next string


def page_fields(text: str) -> dict[str, Any]:
    """A page's fingerprint fields as FingerprintPipeline stores them (signed 64-bit for MongoDB)."""
    fp = fingerprint_text(text, sketch_size=NearDupParams.sketch_size)
    return {"content_hash": fp.content_hash, "simhash": to_signed64(int(fp.simhash)), "dna": list(fp.dna),
            "sketch": [to_signed64(v) for v in fp.sketch], "fp_version": fp.version, "length": fp.length}


def migrate_fingerprints(store: Any, chunk: int = 500) -> int:
    """Re-fingerprint pages of another version, then rebuild the index; returns the pages redone."""
    version = current_version()
    if all(store._retry("mongo", store.pages.find_one, old, {"_id": 1}) is None for old in outdated(version)):
        return 0
    t, done = time.monotonic(), 0
    with store._repair_lock().held():
        for old in outdated(version):
            while batch := store._retry("mongo", list, store.pages.find(old, {"text": 1}).limit(chunk)):
                ops = [UpdateOne({"_id": d["_id"], **old}, {"$set": page_fields(str(d.get("text") or ""))})
                       for d in batch]
                store._retry("mongo", store.pages.bulk_write, ops, ordered=False)
                done += len(batch)
        n = store._rebuild_index(exclude=store.undecided_pages())
    log.warning("fingerprints of %s pages at %s re-computed for version %s, index rebuilt (%s entries) in %.1f s",
                f"{done:,}", mask_credentials(store.mongo_uri), version, f"{n:,}", time.monotonic() - t)
    return done
