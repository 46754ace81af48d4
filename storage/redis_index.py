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
- ``sh:{block}:{value hex}``  one set per (block number, 16-bit block value), the pigeonhole tables
  for k = 3 (64 bits = 4 blocks of 16). A member is the other 48 bits of the fingerprint as an
  integer, so Redis stores the set as an intset (8 bytes a member, no per-member overhead); the page
  id is stored once, in ``fp:``. The block's own 16 bits are implied by the key.
- ``n``  count of indexed pages; ``layout`` the version of this layout (a change rebuilds the index).
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

LAYOUT = "2"  # bump when the key layout changes: open_store then rebuilds the index from MongoDB
BLOCKS = 4
BLOCK_BITS = 16
MASK64 = (1 << 64) - 1
_HEX_ID = re.compile(r"[0-9a-f]{24}|[0-9a-f]{32}")
_RAW_LENGTHS = (12, 16)

# One round trip: exact check, candidate fetch from the 4 block sets, Hamming filter, insert.
# ARGV: prefix, exact bucket, exact field, page id (bytes), fp (8 bytes), k, insert flag (1/0)
# Returns {0} (new, inserted if flag), {1, id, 0, fp} (exact), {2, id, distance, fp} (near).
CHECK_AND_INSERT_LUA = r"""
local prefix = ARGV[1]
local ekey = prefix .. 'ex:' .. ARGV[2]
local efield = ARGV[3]
local pid = ARGV[4]
local fp = ARGV[5]
local fpf = string.sub(fp, 2)
local k = tonumber(ARGV[6])
local insert = ARGV[7] == '1'
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(fp, 1, 8)
local p = {b1 * 256 + b2, b3 * 256 + b4, b5 * 256 + b6, b7 * 256 + b8}
local fpkey = prefix .. 'fp:' .. string.format('%03x', rshift(p[1], 4))
if redis.call('HEXISTS', ekey, efield) == 1 then
  -- same content => same SimHash, so the owner is found under this fingerprint
  return {1, redis.call('HGET', fpkey, fpf) or '', 0, fp}
end
local function pc(x)
  x = x - band(rshift(x, 1), 0x5555)
  x = band(x, 0x3333) + band(rshift(x, 2), 0x3333)
  x = band(x + rshift(x, 4), 0x0F0F)
  return band(x + rshift(x, 8), 0x1F)
end
local others = {{2, 3, 4}, {1, 3, 4}, {1, 2, 4}, {1, 2, 3}}
local bestd, best, bestfp = k + 1, nil, nil
for i = 1, 4 do
  local o = others[i]
  local q1, q2, q3 = p[o[1]], p[o[2]], p[o[3]]
  local members = redis.call('SMEMBERS', prefix .. 'sh:' .. (i - 1) .. ':' .. string.format('%04x', p[i]))
  for j = 1, #members do
    local v = tonumber(members[j])
    local a = math.floor(v / 4294967296)
    local r = v - a * 4294967296
    local c = math.floor(r / 65536)
    local d = r - c * 65536
    local dist = pc(bxor(a, q1))
    if dist < bestd then
      dist = dist + pc(bxor(c, q2))
      if dist < bestd then
        dist = dist + pc(bxor(d, q3))
        if dist < bestd then
          local full = {0, 0, 0, 0}
          full[i] = p[i]; full[o[1]] = a; full[o[2]] = c; full[o[3]] = d
          local cfp = string.char(rshift(full[1], 8), band(full[1], 255), rshift(full[2], 8), band(full[2], 255),
                                  rshift(full[3], 8), band(full[3], 255), rshift(full[4], 8), band(full[4], 255))
          local cid = redis.call('HGET', prefix .. 'fp:' .. string.format('%03x', rshift(full[1], 4)), string.sub(cfp, 2))
          if cid then bestd = dist; best = cid; bestfp = cfp end
        end
      end
    end
  end
  if bestd == 0 then break end
end
if best then return {2, best, bestd, bestfp} end
if insert then
  redis.call('HSET', ekey, efield, 1)
  if redis.call('HSETNX', fpkey, fpf, pid) == 1 then
    for i = 1, 4 do
      local o = others[i]
      local m = p[o[1]] * 4294967296 + p[o[2]] * 65536 + p[o[3]]
      redis.call('SADD', prefix .. 'sh:' .. (i - 1) .. ':' .. string.format('%04x', p[i]), string.format('%.0f', m))
    end
  end
  redis.call('INCR', prefix .. 'n')
end
return {0}
"""

# Remove one page if the index still points at it. ARGV: prefix, exact bucket, exact field, id, fp.
REMOVE_LUA = r"""
local prefix = ARGV[1]
local ekey = prefix .. 'ex:' .. ARGV[2]
local pid = ARGV[4]
local fp = ARGV[5]
local removed = 0
local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(fp, 1, 8)
local p = {b1 * 256 + b2, b3 * 256 + b4, b5 * 256 + b6, b7 * 256 + b8}
local fpkey = prefix .. 'fp:' .. string.format('%03x', bit.rshift(p[1], 4))
if redis.call('HGET', fpkey, string.sub(fp, 2)) == pid then
  redis.call('HDEL', ekey, ARGV[3])
  redis.call('HDEL', fpkey, string.sub(fp, 2))
  local others = {{2, 3, 4}, {1, 3, 4}, {1, 2, 4}, {1, 2, 3}}
  for i = 1, 4 do
    local o = others[i]
    local m = p[o[1]] * 4294967296 + p[o[2]] * 65536 + p[o[3]]
    redis.call('SREM', prefix .. 'sh:' .. (i - 1) .. ':' .. string.format('%04x', p[i]), string.format('%.0f', m))
  end
  removed = 1
end
if removed == 1 then redis.call('DECR', prefix .. 'n') end
return removed
"""


# Take a page that is in the index but not in MongoDB (a crawler died between the check and the save)
# out of fp: and sh: (and ex: when its content hash is known). ARGV: prefix, id, fp, ex bucket, ex field.
EVICT_LUA = r"""
local prefix, pid, fp = ARGV[1], ARGV[2], ARGV[3]
local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(fp, 1, 8)
local p = {b1 * 256 + b2, b3 * 256 + b4, b5 * 256 + b6, b7 * 256 + b8}
local fpkey = prefix .. 'fp:' .. string.format('%03x', bit.rshift(p[1], 4))
if redis.call('HGET', fpkey, string.sub(fp, 2)) ~= pid then return 0 end
redis.call('HDEL', fpkey, string.sub(fp, 2))
if ARGV[5] ~= '' then redis.call('HDEL', prefix .. 'ex:' .. ARGV[4], ARGV[5]) end
local others = {{2, 3, 4}, {1, 3, 4}, {1, 2, 4}, {1, 2, 3}}
for i = 1, 4 do
  local o = others[i]
  local m = p[o[1]] * 4294967296 + p[o[2]] * 65536 + p[o[3]]
  redis.call('SREM', prefix .. 'sh:' .. (i - 1) .. ':' .. string.format('%04x', p[i]), string.format('%.0f', m))
end
redis.call('DECR', prefix .. 'n')
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
        return self.kind != "new"


class SimHashIndex:
    """The Redis side of dedup: atomic check-and-insert in one EVALSHA round trip."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.r = client
        self.prefix = prefix
        self._check = client.register_script(CHECK_AND_INSERT_LUA)
        self._remove = client.register_script(REMOVE_LUA)
        self._evict = client.register_script(EVICT_LUA)

    def check(self, page_id: str, content_hash: str, simhash: int, k: int, insert: bool = True) -> DedupResult:
        """Exact check, then nearest within k bits; insert when new and insert is True."""
        if not 0 <= k <= 3 * BLOCK_BITS:
            raise ValueError(f"k must be between 0 and {3 * BLOCK_BITS}")
        bucket, field = exact_key_parts(content_hash)
        res = self._check(args=[self.prefix, bucket, field, encode_id(page_id), fp_bytes(simhash), k,
                                1 if insert else 0])
        if res[0] == 0:
            return DedupResult("new")
        return DedupResult("exact" if res[0] == 1 else "near", decode_id(res[1]) if res[1] else None, int(res[2]),
                           original_simhash=int.from_bytes(res[3], "big"))

    def evict(self, page_id: str, simhash: int, content_hash: str | None = None) -> bool:
        """Remove an index entry whose page never reached MongoDB (only if the index still points at it)."""
        bucket, field = exact_key_parts(content_hash) if content_hash else ("", b"")
        return bool(self._evict(args=[self.prefix, encode_id(page_id), fp_bytes(simhash), bucket, field]))

    def remove(self, page_id: str, content_hash: str, simhash: int) -> bool:
        """Take one page out of the index (only where the index points at it)."""
        bucket, field = exact_key_parts(content_hash)
        return bool(self._remove(args=[self.prefix, bucket, field, encode_id(page_id), fp_bytes(simhash)]))

    def add_many(self, pages: Iterable[tuple[str, str, int]], batch: int = 2000) -> int:
        """Insert known originals without checking (rebuild); pipelined; returns how many."""
        n = 0
        pipe = self.r.pipeline(transaction=False)
        for page_id, content_hash, simhash in pages:
            bucket, field = exact_key_parts(content_hash)
            pid = encode_id(page_id)
            fpb = fp_bytes(simhash)
            pipe.hsetnx(f"{self.prefix}ex:{bucket}", field, 1)
            pipe.hsetnx(f"{self.prefix}fp:{simhash >> 52:03x}", fpb[1:], pid)
            pieces = [(simhash >> (48 - 16 * i)) & 0xFFFF for i in range(BLOCKS)]
            for i in range(BLOCKS):
                o = [pieces[j] for j in range(BLOCKS) if j != i]
                pipe.sadd(f"{self.prefix}sh:{i}:{pieces[i]:04x}", (o[0] << 32) | (o[1] << 16) | o[2])
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

    def layout_ok(self) -> bool:
        """True if the index was written with this code's layout (or is empty)."""
        v = self.r.get(f"{self.prefix}layout")
        if v is None:
            return self.count() is None
        return v.decode() == LAYOUT

    def mark_layout(self) -> None:
        """Record the layout version of the index."""
        self.r.set(f"{self.prefix}layout", LAYOUT)


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
