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
  ``sq:{claim >> 7}`` claim number -> page id, ``skseq`` the claim counter (see lua/sketch_claim.lua).
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

Modules: ``ids`` (the id codec), ``keys`` (key-space helpers), ``scripts`` (the Lua scripts in ``lua/``),
``simhash`` (`SimHashIndex`, `DedupResult`), ``sketches`` (`RedisSketchIndex`), ``seeds`` (`RedisSeedIndex`).
"""
from .ids import MASK64, decode_id, encode_id, exact_key_parts, fp_bytes
from .keys import check_prefix, delete_matching, glob_escape, is_cluster, record_loss, used_memory
from .scripts import CHECK_AND_INSERT_LUA
from .seeds import RedisSeedIndex
from .simhash import CLUSTER_LAYOUT, LAYOUT, DedupResult, SimHashIndex
from .sketches import INTENT_SECONDS, RedisSketchIndex

__all__ = [
    "CHECK_AND_INSERT_LUA", "CLUSTER_LAYOUT", "INTENT_SECONDS", "LAYOUT", "MASK64", "DedupResult", "RedisSeedIndex",
    "RedisSketchIndex", "SimHashIndex", "check_prefix", "decode_id", "delete_matching", "encode_id",
    "exact_key_parts", "fp_bytes", "glob_escape", "is_cluster", "record_loss", "used_memory",
]
