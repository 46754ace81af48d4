"""Which MongoDB store the Redis index was built from, and one index repair at a time.

MongoDB's `meta` collection holds the store's identity: a random id made once per database (an upsert on
a fixed _id, so processes opening at once agree) and an epoch that every open_store raises once the index
is repaired. The Redis index records both under ``<prefix>store`` once it is whole. An index recording no
id or another one was built from another database, or from this one before a reset; an index recording a
higher epoch than MongoDB's saw a later MongoDB than this one (restored from an older backup). Redis is
read before MongoDB: an epoch in Redis was read from MongoDB earlier still, so it is higher only when
MongoDB went back in time (two processes opening at once never see that).

``<prefix>repair`` is a lock (SET NX with a token, renewed while held): one process repairs the index while
the others opening the store wait, then decide again, so none crawls against a half-rebuilt index.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import redis
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from .schema import now

log = logging.getLogger(__name__)
META = "meta"          # MongoDB collection: {_id: "store", store_id, epoch, created}
STORE_DOC = "store"
LOCK_SECONDS = 30.0    # a repairer that died frees the lock after this long; a live one renews it
WAIT_REPORT = 60.0     # a process waiting for the lock says so again, as a WARNING, this often
RELEASE_LUA = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
RENEW_LUA = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"


def owner_key(prefix: str) -> str:
    """Where the Redis index records the store it was built from (one key: any cluster slot will do)."""
    return f"{prefix}store"


def lock_key(prefix: str) -> str:
    """The index repair lock."""
    return f"{prefix}repair"


def lost_key(prefix: str) -> str:
    """A recent data loss of the index (a random token, kept for the loss window: storage/connection.py)."""
    return f"{prefix}lost"


@dataclass(frozen=True)
class Identity:
    """A store's random id and its generation."""

    store_id: str
    epoch: int

    def encode(self) -> str:
        return f"{self.store_id}:{self.epoch}"

    @classmethod
    def decode(cls, raw: bytes | str | None) -> "Identity | None":
        """The recorded identity (an unreadable value reads as another store's)."""
        if raw is None:
            return None
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        store_id, _, epoch = text.rpartition(":")
        return cls(store_id, int(epoch)) if store_id and epoch.isdigit() else cls(text, 0)


def store_identity(db: Any, bump: bool = False) -> Identity:
    """This database's identity, made on first use; `bump` raises its epoch (every open_store does)."""
    meta = db[META]
    if not bump:
        doc = meta.find_one({"_id": STORE_DOC})
        if doc is not None:
            return Identity(doc["store_id"], int(doc.get("epoch", 0)))
    update = {"$setOnInsert": {"store_id": uuid.uuid4().hex, "created": now()}, "$inc": {"epoch": int(bump)}}
    for _ in range(20):
        try:
            doc = meta.find_one_and_update({"_id": STORE_DOC}, update, upsert=True,
                                           return_document=ReturnDocument.AFTER)
        except DuplicateKeyError:   # another process is inserting it: an update once its insert shows
            doc = None
        if doc is not None:         # (SecantusDB may also answer a racing upsert with no document)
            return Identity(doc["store_id"], int(doc["epoch"]))
        time.sleep(0.05)
    raise RuntimeError(f"could not read or create {META}.{STORE_DOC} (racing upserts)")


class RepairLock:
    """One process at a time repairs a Redis index; the others wait for it (see the module docstring).

    Reentrant for the thread that holds it (`here`: one per store, shared by its locks): a repair that meets
    a Redis outage re-fills the index once Redis answers, inside the repair. That inner repair waited for the
    lock its own thread held, renewed by its own keeper, forever (invariant seed 7515: a crawler hung at its
    store's open, and every other crawler behind it)."""

    def __init__(self, client: Any, key: str, call: Callable[..., Any] | None = None,
                 here: threading.local | None = None) -> None:
        self.r = client
        self.key = key
        self.call = call or (lambda fn, *a, **kw: fn(*a, **kw))   # the store's retry policy
        self.here = here if here is not None else threading.local()
        self._release = client.register_script(RELEASE_LUA)
        self._renew = client.register_script(RENEW_LUA)

    @contextmanager
    def held(self) -> Iterator[float]:
        """Hold the lock (waiting while another process holds it); yields the seconds waited."""
        if getattr(self.here, "held", False):   # this thread holds it: a repair inside a repair
            yield 0.0
            return
        token = f"{socket.gethostname()} pid {os.getpid()} {uuid.uuid4().hex}"   # whom the others wait for
        t0 = time.monotonic()
        next_word = t0
        while (holder := self.call(self._take, token)) is not None:
            if time.monotonic() >= next_word:   # said at once, then every WAIT_REPORT s: a stuck holder is named
                (log.info if next_word == t0 else log.warning)(
                    "another process (%s) is repairing the Redis index (%s): waiting for it%s",
                    _holder_name(holder), self.key,
                    f" ({time.monotonic() - t0:.0f} s so far)" if next_word > t0 else "")
                next_word += WAIT_REPORT
            time.sleep(0.1)
        stop = threading.Event()
        keeper = threading.Thread(target=self._keep, args=(token, stop), daemon=True, name="zhdedup-repair-lock")
        keeper.start()
        self.here.held = True
        try:
            yield time.monotonic() - t0
        finally:
            self.here.held = False
            stop.set()
            keeper.join()
            try:
                self._release(keys=[self.key], args=[token])
            except redis.RedisError:   # it expires after LOCK_SECONDS
                pass

    def _take(self, token: str) -> bytes | None:
        """SET NX: None once taken (also when an attempt whose reply was lost took it), else its holder's token
        (b"" when it expired between the two calls)."""
        if self.r.set(self.key, token, nx=True, px=int(LOCK_SECONDS * 1000)):
            return None
        holder = self.r.get(self.key)
        return None if holder == token.encode() else (holder or b"")

    def _keep(self, token: str, stop: threading.Event) -> None:
        """Renew the lock while held (a long rebuild outlasts LOCK_SECONDS)."""
        while not stop.wait(LOCK_SECONDS / 3):
            try:
                self._renew(keys=[self.key], args=[token, int(LOCK_SECONDS * 1000)])
            except redis.RedisError:
                pass


def _holder_name(token: bytes) -> str:
    """The host and pid in a holder's token (a lock taken by an older version holds a bare uuid)."""
    if not token:
        return "one that has just let go"
    return token.decode("utf-8", "replace").rpartition(" ")[0] or "an older version"
