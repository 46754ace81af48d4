"""SimHash block tables and exact hashes in Redis: the atomic check-and-insert behind crawl-time dedup."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import redis

from fingerprint.hamming_index import block_layout
from fingerprint.neardup import check_k

from ..sentinels import SlotMarkers
from .ids import decode_id, encode_id, exact_key_parts, fp_bytes
from .keys import check_prefix, delete_matching, glob_escape, is_cluster, record_loss
from .scripts import (BLOCK_CHECK_LUA, BLOCK_REMOVE_LUA, BLOCK_REPOINT_LUA, CHECK_AND_INSERT_LUA, HDEL_IF_LUA,
                      HSET_IF_LUA, REMOVE_LUA, TRANSFER_LUA)

CLUSTER_LAYOUT = "4c"  # the cluster's per-slot layout (see the module docstring)
LAYOUT = "4"  # bump when the key layout changes: open_store then rebuilds the index from MongoDB


@dataclass(frozen=True)
class DedupResult:
    """What check_and_insert found: kind "new" | "exact" | "near", the original's id, the distance."""

    kind: str
    original_id: str | None = None
    distance: int = 0
    spooled: bool = False  # True when Redis was unreachable and the check waits in the spool
    original_simhash: int | None = None  # the original's fingerprint (for near duplicates)
    provisional: bool = False  # new while a Redis data loss is recent (others' pages may not be back yet)
    # kind "lost": the index lost its data; "loss" (and a cluster's provisional "new"): one this process has not met yet
    loss: bytes | None = None

    @property
    def is_duplicate(self) -> bool:
        """True for exact and near duplicates."""
        return self.kind in ("exact", "near")


class SimHashIndex:
    """The Redis side of dedup: exact hashes and SimHash block tables, atomic check-and-insert.

    The block layout is derived from k (k+1 blocks, fingerprint.hamming_index.block_layout), so every
    fingerprint within k bits is found (pigeonhole); the layout key records k, and an index written
    for another k is rebuilt from MongoDB when the store opens. On one server a check is one EVALSHA;
    on a Redis Cluster it is one script per block table (each on its own slot), see `_check_cluster`.
    """

    def __init__(self, client: redis.Redis, prefix: str, k: int = 3) -> None:
        self.r = client
        self.prefix = prefix
        self.k = check_k(k)
        self.layout = block_layout(self.k)
        self.cluster = is_cluster(client)
        self.markers = SlotMarkers(client, prefix) if self.cluster else None
        if self.cluster:
            check_prefix(prefix)
            self._block = client.register_script(BLOCK_CHECK_LUA)
            self._block_remove = client.register_script(BLOCK_REMOVE_LUA)
            self._hdel_if = client.register_script(HDEL_IF_LUA)
            self._block_repoint = client.register_script(BLOCK_REPOINT_LUA)
        else:
            self._check = client.register_script(CHECK_AND_INSERT_LUA)
            self._remove = client.register_script(REMOVE_LUA)
            self._transfer = client.register_script(TRANSFER_LUA)
        self._hset_if = client.register_script(HSET_IF_LUA)

    def _blocks(self, simhash: int) -> list[int]:
        return [(simhash >> shift) & ((1 << width) - 1) for shift, width in self.layout]

    def _keys(self, simhash: int, exact_bucket: str | None) -> list[str]:
        """ex bucket, fp bucket, counter, then this fingerprint's block sets (single-server layout)."""
        fp_key = f"{self.prefix}fp:{simhash >> 52:03x}"
        blocks = [f"{self.prefix}sh:{i}:{v:x}" for i, v in enumerate(self._blocks(simhash))]
        ex_key = f"{self.prefix}ex:{exact_bucket}" if exact_bucket is not None else fp_key
        return [ex_key, fp_key, f"{self.prefix}n", *blocks]

    def _ckeys(self, simhash: int) -> list[str]:
        """The cluster's block tables of a fingerprint: one hash tag per (block, value)."""
        return [f"{self.prefix}sh:{{{i}:{v:x}}}" for i, v in enumerate(self._blocks(simhash))]

    def _ex_ckey(self, bucket: str) -> str:
        return f"{self.prefix}ex:{{x{bucket}}}"

    def _served(self, k: int | None) -> int:
        """k itself, when the block layout finds every neighbour within it (any k up to the layout's)."""
        if k is None:
            return self.k
        if not 0 <= check_k(k) <= self.k:
            raise ValueError(f"this index's block layout serves k <= {self.k}; asked for k={k}")
        return k

    def check(self, page_id: str, content_hash: str, simhash: int, k: int | None = None,
              insert: bool = True, guard: Sequence[Any] | None = None) -> DedupResult:
        """Exact check, then nearest within k bits; insert when new and insert is True.

        `guard` (one server): (owner key, lost key, loss token met, window s, fresh token): the same round
        trip says a data loss (kind "lost": no owner key; "loss": a loss not met yet) instead of deciding,
        and marks a new page decided while a loss is recent as provisional (see CHECK_AND_INSERT_LUA)."""
        k = self._served(k)
        bucket, field = exact_key_parts(content_hash)
        fpb = fp_bytes(simhash)
        if self.cluster:
            return self._check_cluster(encode_id(page_id), bucket, field, simhash, k, insert, guard)
        res = self._check(keys=self._keys(simhash, bucket),
                          args=[self.prefix, field, encode_id(page_id), fpb, _member(simhash), k, 1 if insert else 0,
                                *(guard or ())])
        if res[0] == 0:
            return DedupResult("new", provisional=len(res) > 1 and res[1] == 1)
        if res[0] in (3, 4):
            return DedupResult("lost" if res[0] == 3 else "loss", loss=res[1] if len(res) > 1 else None)
        return DedupResult("exact" if res[0] == 1 else "near", decode_id(res[1]) if res[1] else None, int(res[2]),
                           original_simhash=int.from_bytes(res[3], "big"))

    def _check_cluster(self, pid: bytes, bucket: str, field: bytes, simhash: int, k: int,
                       insert: bool, guard: Sequence[Any] | None = None) -> DedupResult:
        """`_decide_cluster` under the data-loss guard: a block table whose slot marker is gone says "lost"
        (this page's entries are taken out again); a new page decided while a loss is recorded is provisional,
        and names the loss when this process has not re-filled for it yet (its caller does that next)."""
        res = self._decide_cluster(pid, bucket, field, simhash, k, insert, guard is not None)
        if guard is None:
            return res
        if res.kind == "lost":
            return DedupResult("lost", loss=record_loss(self.r, guard))
        if res.kind == "new":
            token, seen = self.r.get(guard[1]), guard[2]
            if token is not None:
                return DedupResult("new", provisional=True, loss=None if token == seen else token)
        return res

    def _decide_cluster(self, pid: bytes, bucket: str, field: bytes, simhash: int, k: int,
                        insert: bool, guarded: bool) -> DedupResult:
        """Per-slot check-and-insert: exact bucket, then each block table (insert and scan in one script).

        Of two pages within k bits, the earlier is the one inserted first into the FIRST block table
        they share: the later one's script there sees it; the earlier's did not see the later one.
        Both compute the same order from the same data, so exactly one of two racing copies is new.
        A page found to be a copy takes its entries out again; if its original has meanwhile left
        too (a chain or cycle of racing copies), it checks again against what is left.
        """
        owner = self.r.hget(self._ex_ckey(bucket), field)
        if owner is not None:  # this page itself on a re-check (the caller tells the two apart)
            return DedupResult("exact", decode_id(owner), 0, original_simhash=simhash)
        keys = self._ckeys(simhash)
        tag = bytes.fromhex(bucket + "0") + field if insert else b""
        for _ in range(4):
            seen: list[dict[bytes, tuple[int, int, bytes, int]]] = []  # id -> (fp, distance, tag, number)
            inserted = []
            for i, key in enumerate(keys):
                res = self._block(keys=[key, self.markers.key_for(key)] if guarded else [key],
                                  args=[fp_bytes(simhash), k, 1 if insert else 0, tag if i == 0 else b"", pid])
                if res[0] == -1:   # this slot came back empty: nothing decided, nothing of this page left
                    for done, mine in zip(keys, inserted):
                        if mine:
                            self._block_remove(keys=[done], args=[fp_bytes(simhash), pid])
                    return DedupResult("lost")
                inserted.append(bool(res[0]))
                seen.append({res[j + 3]: (int.from_bytes(res[j], "big"), int(res[j + 4]), res[j + 2], int(res[j + 1]))
                             for j in range(1, len(res), 5)})
            best = self._earliest(simhash, seen, tag)
            if best is None:
                if insert:
                    self.r.hsetnx(self._ex_ckey(bucket), field, pid)
                    if inserted[0]:
                        self.r.incr(f"{self.prefix}n")
                return DedupResult("new")
            kind, other, dist, ofp, first = best
            result = DedupResult(kind, decode_id(other), dist, original_simhash=ofp)
            if not insert:
                return result
            for key, mine in zip(keys, inserted):
                if mine:
                    self._block_remove(keys=[key], args=[fp_bytes(simhash), pid])
            still = self.r.hget(keys[first], fp_bytes(ofp))
            if still is not None and still[5 + still[4]:] == other:
                return result
        return result

    def _earliest(self, simhash: int, seen: list[dict], tag: bytes) -> tuple[str, bytes, int, int, int] | None:
        """The original among pages seen before this one in their first shared block: (kind, id, d, fp, block)."""
        mine = self._blocks(simhash)
        cands = []
        for found in seen:
            for other, (ofp, dist, otag, _) in found.items():
                theirs = self._blocks(ofp)
                first = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a == b)
                if other in seen[first]:
                    exact = bool(tag) and dist == 0 and first == 0 and otag == tag
                    cands.append((not exact, dist, first, seen[first][other][3], other, ofp))
        if not cands:
            return None
        notexact, dist, first, _, other, ofp = min(cands)
        return ("near" if notexact else "exact"), other, dist, ofp, first

    def remove(self, page_id: str, content_hash: str | None, simhash: int) -> bool:
        """Take one page out of the index (only where the index points at it); ex: too when the hash is known."""
        bucket, field = exact_key_parts(content_hash) if content_hash else (None, b"")
        if self.cluster:
            pid, fpb = encode_id(page_id), fp_bytes(simhash)
            removed = [self._block_remove(keys=[key], args=[fpb, pid]) for key in self._ckeys(simhash)]
            if bucket is not None:
                self._hdel_if(keys=[self._ex_ckey(bucket)], args=[field, pid])
            if removed[0]:
                self.r.decr(f"{self.prefix}n")
            return bool(removed[0])
        return bool(self._remove(keys=self._keys(simhash, bucket),
                                 args=[field, encode_id(page_id), fp_bytes(simhash), _member(simhash)]))

    def transfer(self, old_id: str, old_hash: str | None, old_simhash: int, new_id: str, new_hash: str,
                 new_simhash: int) -> None:
        """The page that displaced another is indexed, and the displaced page's entries answer for it from
        then on (TRANSFER_LUA: one script; a cluster adds the new entries before it re-points the old)."""
        if self.cluster:
            self._add_known(new_id, new_hash, new_simhash)
            self.repoint(old_id, old_hash, old_simhash, new_id)
            if new_simhash != old_simhash:   # its fingerprint's entry, if a page displaced before held it for old_id
                self.repoint(old_id, None, new_simhash, new_id)
            return
        old_bucket, old_field = exact_key_parts(old_hash) if old_hash else (None, b"")
        new_bucket, new_field = exact_key_parts(new_hash)
        old_keys, new_keys = self._keys(old_simhash, old_bucket), self._keys(new_simhash, new_bucket)
        self._transfer(keys=old_keys + [new_keys[0], new_keys[1], *new_keys[3:]],
                       args=[len(old_keys) - 3, old_field, encode_id(old_id), fp_bytes(old_simhash),
                             _member(old_simhash), new_field, encode_id(new_id), fp_bytes(new_simhash),
                             _member(new_simhash)])

    def repoint(self, old_id: str, old_hash: str | None, old_simhash: int, new_id: str) -> bool:
        """The old page's entries answer for new_id (only where they are still the old page's)."""
        old, new, fpb = encode_id(old_id), encode_id(new_id), fp_bytes(old_simhash)
        if not self.cluster:
            return bool(self._hset_if(keys=[self._keys(old_simhash, None)[1]], args=[fpb[1:], old, new]))
        done = [self._block_repoint(keys=[key], args=[fpb, old, new]) for key in self._ckeys(old_simhash)]
        if old_hash:
            bucket, field = exact_key_parts(old_hash)
            self._hset_if(keys=[self._ex_ckey(bucket)], args=[field, old, new])
        return bool(done[0])

    def _add_known(self, page_id: str, content_hash: str, simhash: int) -> None:
        """One known original into the cluster layout, unchecked (its counter entry when block 0 is new)."""
        bucket, field = exact_key_parts(content_hash)
        pipe = self.r.pipeline(transaction=False)
        self._add_cluster(pipe, encode_id(page_id), bucket, field, simhash)
        if any(pipe.execute()[1:2]):
            self.r.incr(f"{self.prefix}n")

    def evict(self, page_id: str, simhash: int, content_hash: str | None = None) -> bool:
        """Remove an index entry whose page never reached MongoDB (only if the index still points at it)."""
        return self.remove(page_id, content_hash, simhash)

    def add_many(self, pages: Iterable[tuple[str, str, int]], batch: int = 2000) -> int:
        """Insert known originals without checking (rebuild); pipelined (per node on a cluster); returns how many."""
        n = 0
        pipe = self.r.pipeline(transaction=False)
        for page_id, content_hash, simhash in pages:
            bucket, field = exact_key_parts(content_hash)
            if self.cluster:
                self._add_cluster(pipe, encode_id(page_id), bucket, field, simhash)
            else:
                ex_key, fp_key, _, *blocks = self._keys(simhash, bucket)
                pipe.hsetnx(ex_key, field, 1)
                pipe.hsetnx(fp_key, fp_bytes(simhash)[1:], encode_id(page_id))
                for key in blocks:
                    pipe.sadd(key, _member(simhash))
            n += 1
            if n % batch == 0:
                pipe.execute()
        pipe.execute()
        self.r.set(f"{self.prefix}n", self._recount())
        return n

    def _add_cluster(self, pipe: Any, pid: bytes, bucket: str, field: bytes, simhash: int) -> None:
        """One known original into the cluster layout (insertion number 0: before every checked page)."""
        pipe.hsetnx(self._ex_ckey(bucket), field, pid)
        tag = bytes.fromhex(bucket + "0") + field
        for i, key in enumerate(self._ckeys(simhash)):
            t = tag if i == 0 else b""
            pipe.hsetnx(key, fp_bytes(simhash), b"\0\0\0\0" + bytes([len(t)]) + t + pid)

    def _recount(self) -> int:
        """Indexed pages, counted from the tables (fp: buckets; block 0 tables on a cluster)."""
        pattern = glob_escape(self.prefix) + ("sh:{0:*" if self.cluster else "fp:*")
        keys = list(self.r.scan_iter(match=pattern, count=1000))
        total = 0
        for start in range(0, len(keys), 1000):
            pipe = self.r.pipeline(transaction=False)
            for key in keys[start:start + 1000]:
                pipe.hlen(key)
                if self.cluster:
                    pipe.hexists(key, "#")
            res = pipe.execute()
            total += sum(res[0::2]) - sum(map(int, res[1::2])) if self.cluster else sum(res)
        return total

    def entries(self, batch: int = 1000) -> Iterable[tuple[str, int]]:
        """Every indexed page as (page id, SimHash), read from the fp: buckets (block 0 tables on a cluster)."""
        pattern = glob_escape(self.prefix) + ("sh:{0:*" if self.cluster else "fp:*")
        keys = list(self.r.scan_iter(match=pattern, count=1000))
        for start in range(0, len(keys), batch):
            pipe = self.r.pipeline(transaction=False)
            for key in keys[start:start + batch]:
                pipe.hgetall(key)
            for key, table in zip(keys[start:start + batch], pipe.execute()):
                top = int(key.rsplit(b":", 1)[1], 16) >> 4 if not self.cluster else 0
                for f, v in table.items():
                    if self.cluster and len(f) == 8:    # value: 4-byte number, tag length, tag, page id
                        yield decode_id(v[5 + v[4]:]), int.from_bytes(f, "big")
                    elif not self.cluster:              # field: the low 7 bytes, the bucket's top byte above
                        yield decode_id(v), top << 56 | int.from_bytes(f, "big")

    def exact_entries(self) -> Iterable[tuple[str, bytes, bytes]]:
        """Every exact-hash entry as (bucket, field, value): the value is 1 on one server (it does not say
        whose hash it is), the owner's page id on a cluster."""
        pattern = glob_escape(self.prefix) + "ex:*"
        keys = list(self.r.scan_iter(match=pattern, count=1000))
        for start in range(0, len(keys), 1000):
            pipe = self.r.pipeline(transaction=False)
            for key in keys[start:start + 1000]:
                pipe.hgetall(key)
            for key, table in zip(keys[start:start + 1000], pipe.execute()):
                bucket = key[len(self.prefix) + 3:].decode().strip("{}").removeprefix("x")
                for f, v in table.items():
                    yield bucket, f, v

    def drop_exact(self, entries: Iterable[tuple[str, bytes, bytes]]) -> int:
        """Delete these exact-hash entries (bucket, field, value), on a cluster only where the entry still
        names the same page; returns how many were asked for."""
        n = 0
        pipe = self.r.pipeline(transaction=False)
        for bucket, field, value in entries:
            if self.cluster:
                self._hdel_if(keys=[self._ex_ckey(bucket)], args=[field, value])
            else:
                pipe.hdel(f"{self.prefix}ex:{bucket}", field)
            n += 1
            if n % 2000 == 0:
                pipe.execute()
        pipe.execute()
        return n

    def count(self) -> int | None:
        """Indexed pages (None when the index has never been written)."""
        v = self.r.get(f"{self.prefix}n")
        return None if v is None else int(v)

    def lost_slots(self) -> int:
        """Cluster slots that came back empty since the last repair (storage/sentinels.py); 0 on one server."""
        return self.markers.missing() if self.markers is not None else 0

    def mark_whole(self) -> None:
        """Record the cluster index as whole (after a repair from MongoDB only); nothing on one server."""
        if self.markers is not None:
            self.markers.mark()

    def clear(self) -> int:
        """Delete every index key (ex:, fp:, sh:, n) under the prefix; returns keys deleted."""
        if self.markers is not None:   # first: a check meanwhile says "lost" rather than deciding
            self.markers.clear()
        return delete_matching(self.r, [glob_escape(self.prefix) + p for p in ("ex:*", "fp:*", "sh:*")],
                               extra=[f"{self.prefix}n", f"{self.prefix}layout"])

    @property
    def layout_id(self) -> str:
        """The layout version and k, as recorded in the ``layout`` key."""
        return f"{CLUSTER_LAYOUT if self.cluster else LAYOUT}:k{self.k}"

    def layout_ok(self) -> bool:
        """True if the index was written with this code's layout and this k (or is empty)."""
        v = self.r.get(f"{self.prefix}layout")
        if v is None:
            return self.count() is None
        return v.decode() == self.layout_id

    def mark_layout(self) -> None:
        """Record the layout version and k of the index."""
        self.r.set(f"{self.prefix}layout", self.layout_id)


def _member(simhash: int) -> str:
    """A fingerprint as a block-set member: the signed 64-bit integer (Redis keeps the set as an intset)."""
    return str(simhash - (1 << 64) if simhash >> 63 else simhash)
