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
  rebuilds the index from MongoDB).
- ``seed:{16 hex}``  set of packed (4-byte offset, doc id) for the copy matcher's window seeds;
  ``seeddoc:{doc id}`` the packed (8-byte hash, 4-byte offset) list of one document, for remove().

Page ids: a 24-hex ObjectId or a 32-hex hash id is stored as its 12 or 16 raw bytes; any other id as
``~`` + UTF-8 (``\0~`` + UTF-8 when that would be 12 or 16 bytes long).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Iterable, Sequence

import redis

from fingerprint.hamming_index import block_layout
from fingerprint.neardup import check_k

LAYOUT = "3"  # bump when the key layout changes: open_store then rebuilds the index from MongoDB
MASK64 = (1 << 64) - 1
_HEX_ID = re.compile(r"[0-9a-f]{24}|[0-9a-f]{32}")
_RAW_LENGTHS = (12, 16)

# One round trip: exact check, candidate fetch from the k+1 block sets, Hamming filter, insert.
# KEYS: ex bucket, own fp bucket, page counter, then the k+1 block sets of this fingerprint.
# ARGV: prefix, exact field, page id (bytes), fp (8 bytes), member (signed decimal), k, insert flag (1/0).
# Returns {0} (new, inserted if flag), {1, id, 0, fp} (exact), {2, id, distance, fp} (near).
# Members are whole fingerprints as signed 64-bit integers (an intset: 8 bytes each); Lua numbers are
# doubles, so a member is read as two exact 32-bit halves.
CHECK_AND_INSERT_LUA = r"""
local prefix, efield, pid, fp, member = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local k, insert = tonumber(ARGV[6]), ARGV[7] == '1'
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
local fpf = string.sub(fp, 2)
if redis.call('HEXISTS', KEYS[1], efield) == 1 then
  -- same content => same SimHash, so the owner is found under this fingerprint
  return {1, redis.call('HGET', KEYS[2], fpf) or '', 0, fp}
end
local function pc(x)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  return band(x, 255) + band(rshift(x, 8), 255) + band(rshift(x, 16), 255) + rshift(x, 24)
end
local function halves(s)
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
return {0}
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

    @property
    def is_duplicate(self) -> bool:
        """True for exact and near duplicates."""
        return self.kind in ("exact", "near")


class SimHashIndex:
    """The Redis side of dedup: exact hashes and SimHash block tables, atomic check-and-insert in one EVALSHA.

    The block layout is derived from k (k+1 blocks, fingerprint.hamming_index.block_layout), so every
    fingerprint within k bits is found (pigeonhole); the layout key records k, and an index written
    for another k is rebuilt from MongoDB when the store opens.
    """

    def __init__(self, client: redis.Redis, prefix: str, k: int = 3) -> None:
        self.r = client
        self.prefix = prefix
        self.k = check_k(k)
        self.layout = block_layout(self.k)
        self._check = client.register_script(CHECK_AND_INSERT_LUA)
        self._remove = client.register_script(REMOVE_LUA)

    def _keys(self, simhash: int, exact_bucket: str | None) -> list[str]:
        """ex bucket, fp bucket, counter, then this fingerprint's block sets."""
        fp_key = f"{self.prefix}fp:{simhash >> 52:03x}"
        blocks = [f"{self.prefix}sh:{i}:{(simhash >> shift) & ((1 << width) - 1):x}"
                  for i, (shift, width) in enumerate(self.layout)]
        ex_key = f"{self.prefix}ex:{exact_bucket}" if exact_bucket is not None else fp_key
        return [ex_key, fp_key, f"{self.prefix}n", *blocks]

    def _served(self, k: int | None) -> int:
        """k itself, when the block layout finds every neighbour within it (any k up to the layout's)."""
        if k is None:
            return self.k
        if not 0 <= check_k(k) <= self.k:
            raise ValueError(f"this index's block layout serves k <= {self.k}; asked for k={k}")
        return k

    def check(self, page_id: str, content_hash: str, simhash: int, k: int | None = None,
              insert: bool = True) -> DedupResult:
        """Exact check, then nearest within k bits; insert when new and insert is True."""
        k = self._served(k)
        bucket, field = exact_key_parts(content_hash)
        fpb = fp_bytes(simhash)
        res = self._check(keys=self._keys(simhash, bucket),
                          args=[self.prefix, field, encode_id(page_id), fpb, _member(simhash), k, 1 if insert else 0])
        if res[0] == 0:
            return DedupResult("new")
        return DedupResult("exact" if res[0] == 1 else "near", decode_id(res[1]) if res[1] else None, int(res[2]),
                           original_simhash=int.from_bytes(res[3], "big"))

    def remove(self, page_id: str, content_hash: str | None, simhash: int) -> bool:
        """Take one page out of the index (only where the index points at it); ex: too when the hash is known."""
        bucket, field = exact_key_parts(content_hash) if content_hash else (None, b"")
        return bool(self._remove(keys=self._keys(simhash, bucket),
                                 args=[field, encode_id(page_id), fp_bytes(simhash), _member(simhash)]))

    def evict(self, page_id: str, simhash: int, content_hash: str | None = None) -> bool:
        """Remove an index entry whose page never reached MongoDB (only if the index still points at it)."""
        return self.remove(page_id, content_hash, simhash)

    def add_many(self, pages: Iterable[tuple[str, str, int]], batch: int = 2000) -> int:
        """Insert known originals without checking (rebuild); pipelined; returns how many."""
        n = 0
        pipe = self.r.pipeline(transaction=False)
        for page_id, content_hash, simhash in pages:
            bucket, field = exact_key_parts(content_hash)
            ex_key, fp_key, _, *blocks = self._keys(simhash, bucket)
            pipe.hsetnx(ex_key, field, 1)
            pipe.hsetnx(fp_key, fp_bytes(simhash)[1:], encode_id(page_id))
            for key in blocks:
                pipe.sadd(key, _member(simhash))
            n += 1
            if n % batch == 0:
                pipe.execute()
        pipe.set(f"{self.prefix}n", 0)  # recounted below
        pipe.execute()
        total = sum(self.r.hlen(key) for key in self.r.scan_iter(match=_glob(self.prefix) + "fp:*", count=1000))
        self.r.set(f"{self.prefix}n", total)
        return n

    def count(self) -> int | None:
        """Indexed pages (None when the index has never been written)."""
        v = self.r.get(f"{self.prefix}n")
        return None if v is None else int(v)

    def clear(self) -> int:
        """Delete every index key (ex:, fp:, sh:, n) under the prefix; returns keys deleted."""
        return delete_matching(self.r, [_glob(self.prefix) + p for p in ("ex:*", "fp:*", "sh:*")],
                               extra=[f"{self.prefix}n", f"{self.prefix}layout"])

    @property
    def layout_id(self) -> str:
        """The layout version and k, as recorded in the ``layout`` key."""
        return f"{LAYOUT}:k{self.k}"

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

    def clear(self) -> int:
        """Delete the whole seed index."""
        return delete_matching(self.r, [_glob(self.prefix) + "seed:*", _glob(self.prefix) + "seeddoc:*"])


# The crawl-time dedup's third step (fingerprint.neardup): kept pages' passage sketches.
# ``sk:{4 hex}`` hash (65,536 buckets by the value's top 16 bits), field = the value's other 6 bytes,
# value = entries (1-byte id length, page id, 12-digit claim sequence). A claim adds the page and
# returns, atomically, every other page sharing >= min_shared values with its claim sequence number:
# a page is only ever compared with pages claimed before it, so two crawlers racing on two copies
# never both drop (the later one is the copy) and never both keep what the verification calls a copy.
SKETCH_CLAIM_LUA = r"""
local prefix, pid, min_shared = ARGV[1], ARGV[2], tonumber(ARGV[3])
local seq = redis.call('INCR', prefix .. 'skseq')
local counts, seqs, order = {}, {}, {}
for i = 4, #ARGV do
  local v = ARGV[i]
  local key = prefix .. 'sk:' .. string.format('%02x%02x', string.byte(v, 1, 2))
  local field = string.sub(v, 3)
  local cur = redis.call('HGET', key, field) or ''
  local pos, mine = 1, false
  while pos <= #cur do
    local n = string.byte(cur, pos)
    local id = string.sub(cur, pos + 1, pos + n)
    local s = tonumber(string.sub(cur, pos + 1 + n, pos + n + 12))
    pos = pos + n + 13
    if id == pid then
      mine = true
      if s < seq then seq = s end
    else
      if counts[id] == nil then counts[id] = 0; seqs[id] = s; table.insert(order, id) end
      counts[id] = counts[id] + 1
    end
  end
  if not mine then
    redis.call('HSET', key, field, cur .. string.char(#pid) .. pid .. string.format('%012d', seq))
  end
end
local out = {seq}
for _, id in ipairs(order) do
  if counts[id] >= min_shared then
    table.insert(out, id); table.insert(out, counts[id]); table.insert(out, seqs[id])
  end
end
return out
"""

SKETCH_UNCLAIM_LUA = r"""
local prefix, pid = ARGV[1], ARGV[2]
for i = 3, #ARGV do
  local v = ARGV[i]
  local key = prefix .. 'sk:' .. string.format('%02x%02x', string.byte(v, 1, 2))
  local field = string.sub(v, 3)
  local cur = redis.call('HGET', key, field)
  if cur then
    local kept, pos = {}, 1
    while pos <= #cur do
      local n = string.byte(cur, pos)
      if string.sub(cur, pos + 1, pos + n) ~= pid then table.insert(kept, string.sub(cur, pos, pos + n + 12)) end
      pos = pos + n + 13
    end
    if #kept == 0 then redis.call('HDEL', key, field) else redis.call('HSET', key, field, table.concat(kept)) end
  end
end
return 1
"""


def _value_bytes(values: Sequence[int]) -> list[bytes]:
    return [(v & MASK64).to_bytes(8, "big") for v in values]


class RedisSketchIndex:
    """Kept pages' passage sketches in Redis, with an atomic claim (see SKETCH_CLAIM_LUA)."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.r = client
        self.prefix = prefix
        self._claim = client.register_script(SKETCH_CLAIM_LUA)
        self._unclaim = client.register_script(SKETCH_UNCLAIM_LUA)

    def claim(self, page_id: str, values: Sequence[int], min_shared: int) -> tuple[int, list[tuple[str, int, int]]]:
        """Add a page's sketch; returns (its claim number, [(other page, shared values, its claim number)])."""
        res = self._claim(args=[self.prefix, encode_id(page_id), min_shared, *_value_bytes(values)])
        seq, rest = int(res[0]), res[1:]
        return seq, [(decode_id(rest[i]), int(rest[i + 1]), int(rest[i + 2])) for i in range(0, len(rest), 3)]

    def unclaim(self, page_id: str, values: Sequence[int]) -> None:
        """Take a page's sketch out (a copy found after its claim, a purge)."""
        if values:
            self._unclaim(args=[self.prefix, encode_id(page_id), *_value_bytes(values)])

    def clear(self) -> int:
        """Delete every sketch."""
        return delete_matching(self.r, [_glob(self.prefix) + "sk:*"], [self.prefix + "skseq"])
