"""The Redis index: exact-content hashes, SimHash block tables, and the DNA/seed window index.

Layout (all keys start with the configured prefix, e.g. ``zhd:``):

- ``ex:{3 hex}``  hash, field = 7 bytes of the content hash (bytes 2..9; with the bucket, 68 bits:
  expected false matches at 1e8 pages ~2e-5), value = 1.
  4,096 buckets keep each hash small enough for Redis' compact (ziplist) encoding up to ~2M pages.
  The owner's id is not repeated here: the same normalised text has the same SimHash, so the id is
  read from ``fp:`` (storage falls back to MongoDB's pages.content_hash when a caller's SimHash
  differs, e.g. after a fingerprint version change without `rebuild-index`).
- ``fp:{3 hex}``  hash, field = the low 7 bytes of the big-endian SimHash (the bucket holds the top
  12 bits), value = page id.
- ``sh:{block}:{value hex}``  one set per (block number, block value), the pigeonhole tables: the
  64 bits split into k+1 blocks (4 blocks of 16 bits at k = 3; ``fingerprint.hamming_index.block_layout``),
  so every fingerprint within k bits shares at least one block. A member is the whole fingerprint as a
  signed 64-bit integer, so Redis stores the set as an intset (8 bytes a member, no per-member
  overhead); the page id is stored once, in ``fp:``.
- ``n``  count of indexed pages; ``layout`` the version of this layout and its k (a change of either
  rebuilds the index from MongoDB); ``store`` the MongoDB store and generation the index was built from,
  ``repair`` the lock of whoever repairs it (storage/identity.py).
- ``sk:{4 hex}``  passage-sketch buckets (8-byte records: 4 value bytes + 4-byte claim number) and
  ``sq:{claim >> 7}`` claim number -> page id, ``skseq`` the claim counter (see SKETCH_CLAIM_LUA).
- ``seed:{16 hex}``  set of packed (4-byte offset, doc id) for the copy matcher's window seeds;
  ``seeddoc:{doc id}`` the packed (8-byte hash, 4-byte offset) list of one document, for remove().

On a Redis Cluster (detected from the server, storage.connection.redis_client) every Lua script touches
one hash slot: the layout ``4c`` keeps ``ex:{x<bucket>}`` (field -> page id), ``sh:{<block>:<value hex>}``
hashes (field = the 8-byte fingerprint, value = 4-byte per-key insertion order, the exact-hash tag in
block 0, the page id, plus a ``#`` field counting insertions) and ``sk:{<4 hex>}`` sketch buckets (with
``sq:`` names as on one server), so the
load spreads over the shards. docs/scale-out.md explains why the per-slot steps still give exactly one
original (SimHash: the first block two pages share orders them; sketches: the lowest shared value).

Page ids: a 24-hex ObjectId or a 32-hex hash id is stored as its 12 or 16 raw bytes; any other id as
``~`` + UTF-8 (``\0~`` + UTF-8 when that would be 12 or 16 bytes long).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import redis
from redis.cluster import RedisCluster

from fingerprint.hamming_index import block_layout
from fingerprint.neardup import check_k

from .errors import IndexLost
from .sentinels import SlotMarkers

CLUSTER_LAYOUT = "4c"  # the cluster's per-slot layout (see the module docstring)
LAYOUT = "4"  # bump when the key layout changes: open_store then rebuilds the index from MongoDB
MASK64 = (1 << 64) - 1
_HEX_ID = re.compile(r"[0-9a-f]{24}|[0-9a-f]{32}")
_RAW_LENGTHS = (12, 16)

# Lua numbers are doubles: bits of a 32-bit half counted with LuaBitOp (a popcount for the Hamming distance).
POPCOUNT_LUA = r"""
local function pc(x)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  return band(x, 255) + band(rshift(x, 8), 255) + band(rshift(x, 16), 255) + rshift(x, 24)
end
"""

# One round trip: exact check, candidate fetch from the k+1 block sets, Hamming filter, insert.
# KEYS: ex bucket, own fp bucket, page counter, then the k+1 block sets of this fingerprint.
# ARGV: prefix, exact field, page id (bytes), fp (8 bytes), member (signed decimal), k, insert flag (1/0),
# then optionally the loss guard: owner key, lost key, the loss token this process has re-filled for, the
# loss window (s), a fresh token.
# Returns {0, provisional} (new, inserted if flag), {1, id, 0, fp} (exact), {2, id, distance, fp} (near);
# with the guard also {3, token} (the index lost its data: no owner key; the loss is recorded under the lost
# key for the window) and {4, token} (a loss this process has not re-filled its pages for yet). A new page
# decided while a loss is recorded is provisional (1): other processes may not have re-filled theirs yet.
# Members are whole fingerprints as signed 64-bit integers (an intset: 8 bytes each); Lua numbers are
# doubles, so a member is read as two exact 32-bit halves.
CHECK_AND_INSERT_LUA = r"""
local prefix, efield, pid, fp, member = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local k, insert = tonumber(ARGV[6]), ARGV[7] == '1'
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
local fpf = string.sub(fp, 2)
local provisional = 0
if ARGV[8] then
  if redis.call('EXISTS', ARGV[8]) == 0 then
    redis.call('SET', ARGV[9], ARGV[12], 'NX', 'EX', tonumber(ARGV[11]))
    return {3, redis.call('GET', ARGV[9])}
  end
  local lost = redis.call('GET', ARGV[9])
  if lost then
    if lost ~= ARGV[10] then return {4, lost} end
    provisional = 1
  end
end
if redis.call('HEXISTS', KEYS[1], efield) == 1 then
  -- same content => same SimHash, so the owner is found under this fingerprint
  return {1, redis.call('HGET', KEYS[2], fpf) or '', 0, fp}
end
""" + POPCOUNT_LUA + r"""local function halves(s)
  local neg = string.byte(s, 1) == 45
  local hi, lo = 0, 0
  for i = neg and 2 or 1, #s do
    lo = lo * 10 + string.byte(s, i) - 48
    local c = math.floor(lo / 4294967296)
    lo = lo - c * 4294967296
    hi = hi * 10 + c
  end
  if neg then
    if lo == 0 then hi = 4294967296 - hi else lo = 4294967296 - lo; hi = 4294967295 - hi end
  end
  return hi, lo
end
local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(fp, 1, 8)
local qhi = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
local qlo = ((b5 * 256 + b6) * 256 + b7) * 256 + b8
local bestd, best, bestfp = k + 1, nil, nil
for i = 4, #KEYS do
  local members = redis.call('SMEMBERS', KEYS[i])
  for j = 1, #members do
    local hi, lo = halves(members[j])
    local dist = pc(bxor(hi, qhi))
    if dist < bestd then
      dist = dist + pc(bxor(lo, qlo))
      if dist < bestd then
        local cfp = string.char(rshift(hi, 24), band(rshift(hi, 16), 255), band(rshift(hi, 8), 255), band(hi, 255),
                                rshift(lo, 24), band(rshift(lo, 16), 255), band(rshift(lo, 8), 255), band(lo, 255))
        local cid = redis.call('HGET', prefix .. 'fp:' .. string.format('%03x', rshift(hi, 20)), string.sub(cfp, 2))
        if cid then bestd = dist; best = cid; bestfp = cfp end
      end
    end
  end
  if bestd == 0 then break end
end
if best then return {2, best, bestd, bestfp} end
if insert then
  redis.call('HSET', KEYS[1], efield, 1)
  if redis.call('HSETNX', KEYS[2], fpf, pid) == 1 then
    for i = 4, #KEYS do redis.call('SADD', KEYS[i], member) end
  end
  redis.call('INCR', KEYS[3])
end
return {0, provisional}
"""

# Take one page out if the index still points at it (a purge, a copy found late, or an entry whose
# crawler died before saving the page). KEYS as above; ARGV: exact field ('' leaves ex: alone), id, fp, member.
REMOVE_LUA = r"""
local fpf = string.sub(ARGV[3], 2)
if redis.call('HGET', KEYS[2], fpf) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[2], fpf)
if ARGV[1] ~= '' then redis.call('HDEL', KEYS[1], ARGV[1]) end
for i = 4, #KEYS do redis.call('SREM', KEYS[i], ARGV[4]) end
redis.call('DECR', KEYS[3])
return 1
"""


# Hand a displaced page's entries to the page that displaced it, in one step: no moment without either
# (a copy checked in between would find nothing and be kept). The displaced page's entries stay, answering
# for the page that displaced it: its text still stands for the story, so a later copy of it (exact or near,
# however far from the displacing page) is a copy of that page. KEYS: the old page's ex bucket, fp bucket,
# counter, its nb block sets, then the new page's ex bucket, fp bucket and block sets. ARGV: nb, then exact
# field, id, fp, member of the old page, then of the new page. Only the old fp: entry changes (its ex: and
# block entries stay as they are), and the new page's fp: entry if it was there already answering for the
# old page (a page displaced before shared the new page's fingerprint). Returns 1 when the old entry was re-pointed.
TRANSFER_LUA = r"""
local base = 3 + tonumber(ARGV[1])
redis.call('HSET', KEYS[base + 1], ARGV[6], 1)
if redis.call('HSETNX', KEYS[base + 2], string.sub(ARGV[8], 2), ARGV[7]) == 1 then
  for i = base + 3, #KEYS do redis.call('SADD', KEYS[i], ARGV[9]) end
  redis.call('INCR', KEYS[3])
elseif redis.call('HGET', KEYS[base + 2], string.sub(ARGV[8], 2)) == ARGV[3] then
  redis.call('HSET', KEYS[base + 2], string.sub(ARGV[8], 2), ARGV[7])
end
if redis.call('HGET', KEYS[2], string.sub(ARGV[4], 2)) == ARGV[3] then
  redis.call('HSET', KEYS[2], string.sub(ARGV[4], 2), ARGV[7])
  return 1
end
return 0
"""

# Compare-and-set of a hash field (an fp: bucket's owner; a cluster ex: bucket's). KEYS: the hash;
# ARGV: field, the id it must hold, the id it gets.
HSET_IF_LUA = r"""
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]); return 1 end
return 0
"""

# Cluster: with a second key, that key's slot marker (storage/sentinels.py): gone, the slot came back empty
# and the script says so ({-1}) instead of deciding.
GUARD_LUA = "if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 0 then return {-1} end\n"

# Cluster: one block table (one hash slot) at a time. KEYS: the block hash (and its slot marker). ARGV: fp (8 bytes), k,
# insert flag, exact tag ('' outside block 0), page id. Inserts this page (when asked and its fingerprint
# is not there yet) with the key's next insertion number; returns {own number or 0, then for every
# OTHER entry within k bits that was there before it: fp, number, tag, page id, distance}.
BLOCK_CHECK_LUA = GUARD_LUA + r"""
local fp, k, insert, tag, pid = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', ARGV[4], ARGV[5]
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
""" + POPCOUNT_LUA + r"""local function word(s, i)
  local a, b, c, d = string.byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local qhi, qlo = word(fp, 1), word(fp, 5)
local all = redis.call('HGETALL', KEYS[1])
local out, mine = {0}, false
for j = 1, #all, 2 do
  local f, v = all[j], all[j + 1]
  if #f == 8 then
    local tl = string.byte(v, 5)
    local id = string.sub(v, 6 + tl)
    if f == fp and id == pid then
      out[1] = word(v, 1); mine = true
    else
      local d = pc(bxor(word(f, 1), qhi))
      if d <= k then
        d = d + pc(bxor(word(f, 5), qlo))
        if d <= k then
          table.insert(out, f); table.insert(out, word(v, 1)); table.insert(out, string.sub(v, 6, 5 + tl))
          table.insert(out, id); table.insert(out, d)
        end
      end
    end
  end
end
if insert and not mine and redis.call('HEXISTS', KEYS[1], fp) == 0 then
  local n = redis.call('HINCRBY', KEYS[1], '#', 1)
  redis.call('HSET', KEYS[1], fp, string.char(band(rshift(n, 24), 255), band(rshift(n, 16), 255),
             band(rshift(n, 8), 255), band(n, 255), #tag) .. tag .. pid)
  out[1] = n
end
return out
"""

# Cluster: one block table's entry answers for another page (a displacement), if it is still the old page's.
# KEYS: block; ARGV: fp, old id, new id. The insertion number and exact tag stay.
BLOCK_REPOINT_LUA = r"""
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local head = 5 + string.byte(v, 5)
if string.sub(v, head + 1) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], string.sub(v, 1, head) .. ARGV[3])
return 1
"""

# Cluster: take one page's entry out of one block table if it is still its own. KEYS: block; ARGV: fp, id.
BLOCK_REMOVE_LUA = r"""
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v or string.sub(v, 6 + string.byte(v, 5)) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
"""

# Compare-and-delete of a hash field (cluster ex: buckets hold the owner's id).
HDEL_IF_LUA = r"""
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
"""


def encode_id(page_id: str) -> bytes:
    """Compact Redis form of a page id: raw bytes for a 24- or 32-hex id (ObjectId, 128-bit hash)."""
    if _HEX_ID.fullmatch(page_id):
        return bytes.fromhex(page_id)
    enc = b"~" + page_id.encode("utf-8")
    return b"\0" + enc if len(enc) in _RAW_LENGTHS else enc


def decode_id(raw: bytes) -> str:
    """Inverse of encode_id."""
    if len(raw) in _RAW_LENGTHS:
        return raw.hex()
    return raw[2:].decode("utf-8") if raw.startswith(b"\0~") else raw[1:].decode("utf-8")


def exact_key_parts(content_hash: str) -> tuple[str, bytes]:
    """Bucket (first 3 hex) and field (bytes 2..9) of a content hash in the ex: hashes (68 bits in all)."""
    h = content_hash.lower()
    if len(h) < 18 or not re.fullmatch(r"[0-9a-f]+", h):
        raise ValueError(f"content_hash must be a hex string of at least 18 digits, got {content_hash!r}")
    return h[:3], bytes.fromhex(h[4:18])


def fp_bytes(simhash: int) -> bytes:
    """8-byte big-endian form of an unsigned 64-bit SimHash."""
    if not 0 <= simhash <= MASK64:
        raise ValueError(f"simhash must be an unsigned 64-bit int, got {simhash!r}")
    return simhash.to_bytes(8, "big")


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
        pattern = _glob(self.prefix) + ("sh:{0:*" if self.cluster else "fp:*")
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
        pattern = _glob(self.prefix) + ("sh:{0:*" if self.cluster else "fp:*")
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
        pattern = _glob(self.prefix) + "ex:*"
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
        return delete_matching(self.r, [_glob(self.prefix) + p for p in ("ex:*", "fp:*", "sh:*")],
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


def is_cluster(client: Any) -> bool:
    """True for a Redis Cluster client (storage.connection.redis_client picks it from the server)."""
    return isinstance(client, RedisCluster)


def used_memory(client: Any) -> int:
    """Bytes Redis uses (summed over a cluster's primaries)."""
    if is_cluster(client):
        return sum(int(i["used_memory"]) for i in client.info("memory", target_nodes=RedisCluster.PRIMARIES).values())
    return int(client.info("memory")["used_memory"])


def record_loss(client: Any, guard: Sequence[Any]) -> bytes | None:
    """A data loss seen: recorded under the lost key for the window unless already; returns its token."""
    _, lost, _, window, fresh = guard
    client.set(lost, fresh, nx=True, ex=int(window))
    return client.get(lost)


def check_prefix(prefix: str) -> None:
    """A key prefix with braces would replace the hash tags that spread the index over the shards."""
    if "{" in prefix or "}" in prefix:
        raise ValueError(f"the Redis key prefix must not contain braces on a Redis Cluster: {prefix!r}")


def _member(simhash: int) -> str:
    """A fingerprint as a block-set member: the signed 64-bit integer (Redis keeps the set as an intset)."""
    return str(simhash - (1 << 64) if simhash >> 63 else simhash)


def _glob(prefix: str) -> str:
    """Escape glob characters of a key prefix for SCAN MATCH."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", prefix)


def delete_matching(r: redis.Redis, patterns: Sequence[str], extra: Sequence[str] = ()) -> int:
    """SCAN + UNLINK in batches (never KEYS, never FLUSHDB: other projects may share the server)."""
    n = 0
    for pattern in patterns:
        batch = []
        for key in r.scan_iter(match=pattern, count=2000):
            batch.append(key)
            if len(batch) >= 1000:
                n += r.unlink(*batch)
                batch = []
        if batch:
            n += r.unlink(*batch)
    if extra:
        n += r.unlink(*extra)
    return n


_SEED = struct.Struct(">QI")
INTENT_SECONDS = 60  # a cluster claim's intent outlives no crawler that died while claiming


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
        return delete_matching(self.r, [_glob(self.prefix) + "seed:*", _glob(self.prefix) + "seeddoc:*"])


# The crawl-time dedup's third step (fingerprint.neardup): kept pages' passage sketches.
# ``sk:{4 hex}`` STRING per bucket (65,536 buckets by the value's top 16 bits) of fixed 8-byte records:
# the value's low 32 bits, then the page's 4-byte big-endian claim number. ``sq:{claim >> 7}`` hash maps
# a claim number (field: claim & 127) to the page id, written before any record that uses it and never
# changed (deleted when the page is unclaimed). A record is found with string.find (memmem) and kept only
# at a record boundary; 48 bits of each value are compared (a false shared value only adds a candidate
# that the text verification rejects). Rewritten with SET (exact size), never APPEND (which over-allocates).
SK_RECORD = 8
SK_NAMES = 128  # claim numbers per ``sq:`` hash (small-int fields: a compact hash under Redis' defaults)
MAX_CLAIM = (1 << 32) - 1

# Lua helpers: aligned records of one value in a bucket string, and a 4-byte claim number.
SKETCH_RECORDS_LUA = r"""
local function word(s, i)
  local a, b, c, d = string.byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local function records(cur, sub)
  local out, pos = {}, 1
  while true do
    local p = string.find(cur, sub, pos, true)
    if not p then return out end
    if p % 8 == 1 then table.insert(out, p); pos = p + 8 else pos = p + 1 end
  end
end
local function claimbytes(c)
  return string.char(math.floor(c / 16777216) % 256, math.floor(c / 65536) % 256, math.floor(c / 256) % 256, c % 256)
end
"""

# A claim adds the page and returns, atomically, every other page sharing >= min_shared values with its
# claim number: a page is only ever compared with pages claimed before it, so two crawlers racing on two
# copies never both drop (the later one is the copy) and never both keep what the verification calls a copy.
# ARGV: prefix, page id, min_shared, then the values' first 6 bytes (distinct). A page claimed before
# (a resumed decision) keeps its earliest number. Values: bucket (2 bytes), then the record's 4 value bytes. Returns {claim, then per other page: id, shared, claim}.
SKETCH_CLAIM_LUA = SKETCH_RECORDS_LUA + r"""
local prefix, pid, min_shared = ARGV[1], ARGV[2], tonumber(ARGV[3])
local names = {}
local function idof(c)
  if names[c] == nil then
    names[c] = redis.call('HGET', prefix .. 'sq:' .. math.floor(c / 128), c % 128) or false
  end
  return names[c]
end
local keys, curs, found, seq = {}, {}, {}, nil
for i = 4, #ARGV do
  local key = prefix .. 'sk:' .. string.format('%02x%02x', string.byte(ARGV[i], 1, 2))
  keys[i] = key
  if curs[key] == nil then curs[key] = redis.call('GET', key) or '' end
  found[i] = {}
  for _, p in ipairs(records(curs[key], string.sub(ARGV[i], 3, 6))) do
    local c = word(curs[key], p + 4)
    table.insert(found[i], c)
    if idof(c) == pid and (seq == nil or c < seq) then seq = c end
  end
end
if seq == nil then
  seq = redis.call('INCR', prefix .. 'skseq')
  if seq > 4294967295 then return redis.error_reply('sketch claim numbers exhausted (4-byte records)') end
  redis.call('HSET', prefix .. 'sq:' .. math.floor(seq / 128), seq % 128, pid)
end
local rec = claimbytes(seq)
local counts, first, order = {}, {}, {}
for i = 4, #ARGV do
  local mine, seen = false, {}
  for _, c in ipairs(found[i]) do
    local id = idof(c)
    if id == pid then
      mine = true
    elseif id and not seen[id] then
      seen[id] = true
      if counts[id] == nil then counts[id] = 0; first[id] = c; table.insert(order, id) end
      counts[id] = counts[id] + 1
    end
  end
  if not mine then
    curs[keys[i]] = curs[keys[i]] .. string.sub(ARGV[i], 3, 6) .. rec
    redis.call('SET', keys[i], curs[keys[i]])
  end
end
local out = {seq}
for _, id in ipairs(order) do
  if counts[id] >= min_shared then
    table.insert(out, id); table.insert(out, counts[id]); table.insert(out, first[id])
  end
end
return out
"""

# Cluster: one sketch bucket (one slot). KEYS: the bucket (and its slot marker); ARGV: this claim's 4-byte number, then the
# values' 4 record bytes (ascending). Appends this claim's record to each value unless there; returns
# for every record of these values, this page's included: value index (from 1), position, claim number.
SKETCH_BUCKET_LUA = GUARD_LUA + SKETCH_RECORDS_LUA + r"""
local rec = ARGV[1]
local cur = redis.call('GET', KEYS[1]) or ''
local out, grown = {}, false
for i = 2, #ARGV do
  local mine = false
  for _, p in ipairs(records(cur, ARGV[i])) do
    local c = string.sub(cur, p + 4, p + 7)
    if c == rec then mine = true end
    table.insert(out, i - 1); table.insert(out, (p - 1) / 8); table.insert(out, word(c, 1))
  end
  if not mine then
    table.insert(out, i - 1); table.insert(out, #cur / 8); table.insert(out, word(rec, 1))
    cur = cur .. ARGV[i] .. rec
    grown = true
  end
end
if grown then redis.call('SET', KEYS[1], cur) end
return out
"""

# Take records out of one bucket (single server and cluster). KEYS: the bucket; ARGV: whole 8-byte records.
SKETCH_UNCLAIM_BUCKET_LUA = SKETCH_RECORDS_LUA + r"""
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local n = 0
for i = 1, #ARGV do
  local p = records(cur, ARGV[i])[1]
  if p then cur = string.sub(cur, 1, p - 1) .. string.sub(cur, p + 8); n = n + 1 end
end
if n > 0 then
  if #cur == 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], cur) end
end
return n
"""

# Bulk load: append record blobs to buckets, each rewritten at its exact size. KEYS: buckets; ARGV: blobs.
SKETCH_LOAD_LUA = r"""
for i = 1, #KEYS do redis.call('SET', KEYS[i], (redis.call('GET', KEYS[i]) or '') .. ARGV[i]) end
return #KEYS
"""


def _compared(value: bytes) -> bytes:
    """The 48 compared bits of an 8-byte big-endian sketch value: bucket (top 16 bits), then the low 32."""
    return value[:2] + value[4:]


def _value_bytes(values: Sequence[int]) -> list[bytes]:
    """The distinct compared parts of sketch values, ascending (the order every claim goes in)."""
    return sorted({_compared((v & MASK64).to_bytes(8, "big")) for v in values})


def _claim_bytes(claim: int) -> bytes:
    """A claim number as the 4 bytes of a sketch record."""
    if not 0 < claim <= MAX_CLAIM:
        raise ValueError(f"sketch claim numbers are exhausted (4-byte records): {claim}")
    return claim.to_bytes(4, "big")


def _record_claims(blob: bytes | None, sub: bytes) -> list[int]:
    """Claim numbers of one value's records (its 4 record bytes) in a bucket string, in bucket order."""
    out, pos = [], 0
    while blob:
        p = blob.find(sub, pos)
        if p < 0:
            break
        if p % SK_RECORD == 0:
            out.append(int.from_bytes(blob[p + 4:p + 8], "big"))
            pos = p + SK_RECORD
        else:
            pos = p + 1
    return out


class RedisSketchIndex:
    """Kept pages' passage sketches in Redis, with an atomic claim (see SKETCH_CLAIM_LUA; `_claim_cluster`)."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.r = client
        self.prefix = prefix
        self.cluster = is_cluster(client)
        self.markers = SlotMarkers(client, prefix) if self.cluster else None
        if self.cluster:
            check_prefix(prefix)
            self._bucket = client.register_script(SKETCH_BUCKET_LUA)
        else:
            self._claim = client.register_script(SKETCH_CLAIM_LUA)
        self._unbucket = client.register_script(SKETCH_UNCLAIM_BUCKET_LUA)
        self._load_script = client.register_script(SKETCH_LOAD_LUA)
        self._hdel_if = client.register_script(HDEL_IF_LUA)

    def claim(self, page_id: str, values: Sequence[int], min_shared: int,
              guard: Sequence[Any] | None = None) -> tuple[int, list[tuple[str, int, int]]]:
        """Add a page's sketch; returns (its claim number, [(other page, shared values, its claim number)]).
        On a cluster with the data-loss `guard` (SimHashIndex.check), raises IndexLost when a bucket's slot
        came back empty; the page's records are taken out again first."""
        if self.cluster:
            try:
                return self._claim_cluster(encode_id(page_id), values, min_shared, guard is not None)
            except IndexLost:
                self.unclaim(page_id, values)
                raise IndexLost(record_loss(self.r, guard)) from None
        res = self._claim(args=[self.prefix, encode_id(page_id), min_shared, *_value_bytes(values)])
        seq, rest = int(res[0]), res[1:]
        return seq, [(decode_id(rest[i]), int(rest[i + 1]), int(rest[i + 2])) for i in range(0, len(rest), 3)]

    def _name_key(self, claim: int) -> tuple[str, int]:
        """Where a claim number's page id is: (``sq:`` hash, field)."""
        return f"{self.prefix}sq:{claim // SK_NAMES}", claim % SK_NAMES

    def _name(self, claim: int, pid: bytes) -> None:
        """Record which page a claim number is (before any record with that number is written)."""
        key, field = self._name_key(claim)
        self.r.hset(key, str(field), pid)

    def _names(self, claims: Iterable[int]) -> dict[int, bytes | None]:
        """Page ids of claim numbers (None for a page taken out since), one pipelined read."""
        claims = list(dict.fromkeys(claims))
        pipe = self.r.pipeline(transaction=False)
        for c in claims:
            key, field = self._name_key(c)
            pipe.hget(key, str(field))
        return dict(zip(claims, pipe.execute())) if claims else {}

    def _buckets(self, values: Sequence[int]) -> list[tuple[str, list[bytes]]]:
        """(bucket key, its values' 4 record bytes) in ascending value order (on a cluster the bucket is the key's hash tag)."""
        out: dict[str, list[bytes]] = {}
        for v in _value_bytes(values):
            bucket = f"{{{v[:2].hex()}}}" if self.cluster else v[:2].hex()
            out.setdefault(f"{self.prefix}sk:{bucket}", []).append(v[2:])
        return list(out.items())

    def _claim_cluster(self, pid: bytes, values: Sequence[int], min_shared: int,
                       guarded: bool = False) -> tuple[int, list]:
        """Claim bucket by bucket in ascending value order; a page claimed earlier is reported.

        The claim number comes from one INCR on ``skseq`` (one small hot key); its page id is recorded
        before the first bucket. Which of two pages is earlier is decided where they share their LOWEST
        value: the one whose record comes first there. A page seen before this one at some value has
        already claimed all its lower values (ascending order), so re-reading this page's values shows
        whether it came after this one there. How many values two pages share is counted on that
        re-read, or, for a page still claiming, from its intent (its whole sketch, written before its
        first bucket and deleted after its last): a page seen at one value while still claiming may share more.
        """
        seq = int(self.r.incr(f"{self.prefix}skseq"))
        _claim_bytes(seq)
        self._name(seq, pid)
        mine = sorted({(v & MASK64).to_bytes(8, "big") for v in values})
        intent = f"{self.prefix}ski:{pid.hex()}"
        self.r.set(intent, b"".join(mine), ex=INTENT_SECONDS)
        try:
            return self._claim_buckets(pid, seq, mine, min_shared, guarded)
        finally:
            self.r.delete(intent)

    def _claim_buckets(self, pid: bytes, seq: int, mine: list[bytes], min_shared: int,
                       guarded: bool = False) -> tuple[int, list]:
        buckets = self._buckets([int.from_bytes(v, "big") for v in mine])
        found: list[list[tuple[int, int]]] = []      # per value: (position, claim number) of its records
        for key, subs in buckets:
            res = self._bucket(keys=[key, self.markers.key_for(key)] if guarded else [key],
                               args=[_claim_bytes(seq), *subs])
            if res and res[0] == -1:
                raise IndexLost(None)
            per: list[list[tuple[int, int]]] = [[] for _ in subs]
            for j in range(0, len(res), 3):
                per[int(res[j]) - 1].append((int(res[j + 1]), int(res[j + 2])))
            found.extend(per)
        names = self._names(c for recs in found for _, c in recs if c != seq)
        names[seq] = pid
        seq = min([c for recs in found for _, c in recs if names.get(c) == pid] + [seq])
        before: dict[bytes, int] = {}      # id -> lowest value index where it was before this page
        claims: dict[bytes, int] = {}      # id -> its claim number
        for i, recs in enumerate(found):
            own = min(p for p, c in recs if names.get(c) == pid)
            for p, c in recs:
                o = names.get(c)
                if o is not None and o != pid:
                    if p < own:
                        before.setdefault(o, i)
                    claims.setdefault(o, c)
        pipe = self.r.pipeline(transaction=False)
        for o in claims:   # intents first: a page whose intent is gone has claimed every value by now
            pipe.get(f"{self.prefix}ski:{o.hex()}")
        intents = dict(zip(claims, pipe.execute()))
        present = self._present(buckets, names)
        before = {o: at for o, at in before.items() if not any(o in ids for ids in present[:at])}
        shared: dict[bytes, int] = {}
        for ids in present:
            for o in ids - {pid}:
                shared[o] = shared.get(o, 0) + 1
        mine_set = {_compared(v) for v in mine}
        for o, blob in intents.items():
            if blob:
                theirs = {_compared(blob[i:i + 8]) for i in range(0, len(blob), 8)}
                shared[o] = max(shared.get(o, 0), len(mine_set & theirs))
        return seq, [(decode_id(o), n, min(claims.get(o, seq), seq - 1) if o in before
                      else max(claims.get(o, seq), seq + 1)) for o, n in shared.items() if n >= min_shared]

    def _present(self, buckets: list[tuple[str, list[bytes]]], names: dict[int, bytes | None]) -> list[set[bytes]]:
        """Re-read: the page ids holding each value now (ascending value order)."""
        pipe = self.r.pipeline(transaction=False)
        for key, _ in buckets:
            pipe.get(key)
        per_value = [_record_claims(blob, sub) for (_, subs), blob in zip(buckets, pipe.execute()) for sub in subs]
        names.update(self._names(c for cs in per_value for c in cs if c not in names))
        return [{names[c] for c in cs if names.get(c) is not None} for cs in per_value]

    def unclaim(self, page_id: str, values: Sequence[int]) -> None:
        """Take a page's sketch out (a copy found after its claim, a purge): its records, then its name."""
        pid = encode_id(page_id)
        buckets = self._buckets(values)
        pipe = self.r.pipeline(transaction=False)
        for key, _ in buckets:
            pipe.get(key)
        found = [[(sub, _record_claims(blob, sub)) for sub in subs] for (_, subs), blob in zip(buckets, pipe.execute())]
        names = self._names(c for per in found for _, cs in per for c in cs)
        own = {c for c, name in names.items() if name == pid}
        for (key, _), per in zip(buckets, found):
            recs = [sub + _claim_bytes(c) for sub, cs in per for c in cs if c in own]
            if recs:
                self._unbucket(keys=[key], args=recs)
        for c in own:
            key, field = self._name_key(c)
            self._hdel_if(keys=[key], args=[str(field), pid])

    def add_many(self, pages: Iterable[tuple[str, Sequence[int]]], batch: int = 100_000) -> int:
        """Known kept pages' sketches in claim order, unchecked (rebuild; pipelined, exact-size buckets); returns how many."""
        n, chunk = 0, []
        for page in pages:
            chunk.append(page)
            if len(chunk) >= batch:
                n += self._load(chunk)
                chunk = []
        return n + (self._load(chunk) if chunk else 0)

    def _load(self, chunk: list[tuple[str, Sequence[int]]]) -> int:
        """One batch of add_many: names first (pipelined), then every bucket's new records in one rewrite."""
        first = int(self.r.incrby(f"{self.prefix}skseq", len(chunk))) - len(chunk) + 1
        _claim_bytes(first + len(chunk) - 1)
        recs: dict[str, bytearray] = {}
        pipe = self.r.pipeline(transaction=False)
        for claim, (page_id, values) in enumerate(chunk, first):
            key, field = self._name_key(claim)
            pipe.hset(key, str(field), encode_id(page_id))
            if len(pipe) >= 5000:
                pipe.execute()
            tail = _claim_bytes(claim)
            for bucket, subs in self._buckets(values):
                blob = recs.setdefault(bucket, bytearray())
                for sub in subs:
                    blob += sub + tail
        pipe.execute()
        items = sorted(recs.items())
        step = 1 if self.cluster else 256  # a cluster script touches one slot
        for start in range(0, len(items), step * 64):
            pipe = self.r.pipeline(transaction=False) if not self.cluster else None
            for s in range(start, min(start + step * 64, len(items)), step):
                part = items[s:s + step]
                call = dict(keys=[k for k, _ in part], args=[bytes(b) for _, b in part])
                if pipe is None:
                    self._load_script(**call)
                else:
                    self._load_script(client=pipe, **call)
            if pipe is not None:
                pipe.execute()
        return len(chunk)

    def drop_names(self, page_ids: set[str]) -> int:
        """Forget which page some claim numbers were (their records stay, nameless: no claim reports them)."""
        wanted = {encode_id(p) for p in page_ids}
        keys = list(self.r.scan_iter(match=_glob(self.prefix) + "sq:*", count=1000)) if wanted else []
        n = 0
        for start in range(0, len(keys), 1000):
            pipe = self.r.pipeline(transaction=False)
            for key in keys[start:start + 1000]:
                pipe.hgetall(key)
            for key, names in zip(keys[start:start + 1000], pipe.execute()):
                n += sum(self._hdel_if(keys=[key], args=[f, pid]) for f, pid in names.items() if pid in wanted)
        return n

    def claimed_any(self) -> bool:
        """True once a sketch was claimed (the ``skseq`` counter exists)."""
        return bool(self.r.exists(f"{self.prefix}skseq"))

    def clear(self) -> int:
        """Delete every sketch (buckets, claim names, intents, the counter)."""
        return delete_matching(self.r, [_glob(self.prefix) + p for p in ("sk:*", "sq:*", "ski:*")],
                               [self.prefix + "skseq"])
