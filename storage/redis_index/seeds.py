"""The copy matcher's window seeds in Redis (fingerprint.matcher's SeedIndex protocol)."""
from __future__ import annotations

import struct
from typing import Sequence

import redis

from .ids import MASK64
from .keys import delete_matching, glob_escape

_SEED = struct.Struct(">QI")


class RedisSeedIndex:
    """SeedIndex protocol (fingerprint.matcher) in Redis: seed hash -> [(doc id, offset)], pipelined."""

    def __init__(self, client: redis.Redis, prefix: str, batch: int = 1000) -> None:
        self.r = client
        self.prefix = prefix
        self.batch = batch

    def _key(self, h: int) -> str:
        return f"{self.prefix}seed:{h & MASK64:016x}"

    def add(self, doc_id: str, seeds: Sequence[tuple[int, int]]) -> None:
        """Index a document's (seed hash, char offset) pairs; re-adding replaces the old seeds."""
        self.remove(doc_id)
        did = doc_id.encode("utf-8")
        blob = bytearray()
        pipe = self.r.pipeline(transaction=False)
        for i, (h, off) in enumerate(seeds, 1):
            pipe.sadd(self._key(h), struct.pack(">I", off) + did)
            blob += _SEED.pack(h & MASK64, off)
            if i % self.batch == 0:
                pipe.execute()
        pipe.set(f"{self.prefix}seeddoc:{doc_id}", bytes(blob))
        pipe.execute()

    def remove(self, doc_id: str) -> None:
        """Drop every seed of a document."""
        blob = self.r.get(f"{self.prefix}seeddoc:{doc_id}")
        if blob is None:
            return
        did = doc_id.encode("utf-8")
        pipe = self.r.pipeline(transaction=False)
        for i, (h, off) in enumerate(_SEED.iter_unpack(blob), 1):
            pipe.srem(self._key(h), struct.pack(">I", off) + did)
            if i % self.batch == 0:
                pipe.execute()
        pipe.delete(f"{self.prefix}seeddoc:{doc_id}")
        pipe.execute()

    def lookup(self, hashes: Sequence[int]) -> dict[int, list[tuple[str, int]]]:
        """Where each seed hash occurs: {hash: [(doc id, offset)]} (hashes with no hit are left out)."""
        out: dict[int, list[tuple[str, int]]] = {}
        uniq = list(dict.fromkeys(h & MASK64 for h in hashes))
        for start in range(0, len(uniq), self.batch):
            chunk = uniq[start:start + self.batch]
            pipe = self.r.pipeline(transaction=False)
            for h in chunk:
                pipe.smembers(self._key(h))
            for h, members in zip(chunk, pipe.execute()):
                if members:
                    out[h] = sorted((m[4:].decode("utf-8"), struct.unpack(">I", m[:4])[0]) for m in members)
        return out

    def indexed(self, doc_ids: Sequence[str]) -> list[bool]:
        """Whether each document's seeds are in the index (its ``seeddoc:`` record exists)."""
        pipe = self.r.pipeline(transaction=False)
        for doc_id in doc_ids:
            pipe.exists(f"{self.prefix}seeddoc:{doc_id}")
        return [bool(x) for x in pipe.execute()] if doc_ids else []

    def clear(self) -> int:
        """Delete the whole seed index."""
        return delete_matching(self.r, [glob_escape(self.prefix) + "seed:*", glob_escape(self.prefix) + "seeddoc:*"])
