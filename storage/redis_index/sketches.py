"""Kept pages' passage sketches in Redis: the crawl-time dedup's third step, with an atomic claim."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import redis

from ..errors import IndexLost
from ..sentinels import SlotMarkers
from .ids import MASK64, decode_id, encode_id
from .keys import check_prefix, delete_matching, glob_escape, is_cluster, record_loss
from .scripts import HDEL_IF_LUA, SKETCH_BUCKET_LUA, SKETCH_CLAIM_LUA, SKETCH_LOAD_LUA, SKETCH_UNCLAIM_BUCKET_LUA

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
INTENT_SECONDS = 60  # a cluster claim's intent outlives no crawler that died while claiming


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
        self._unbucket_all([(key, [sub + _claim_bytes(c) for sub, cs in per for c in cs if c in own])
                            for (key, _), per in zip(buckets, found)])
        for c in own:
            key, field = self._name_key(c)
            self._hdel_if(keys=[key], args=[str(field), pid])

    def _unbucket_all(self, records: list[tuple[str, list[bytes]]]) -> None:
        """Take records out of their buckets: one pipelined round trip (a cluster's buckets go one by one: a
        script touches one slot, and redis-py's cluster pipeline does not load scripts)."""
        records = [(key, recs) for key, recs in records if recs]
        if self.cluster:
            for key, recs in records:
                self._unbucket(keys=[key], args=recs)
            return
        pipe = self.r.pipeline(transaction=False)
        for key, recs in records:
            self._unbucket(keys=[key], args=recs, client=pipe)
        if records:
            pipe.execute()

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
        keys = list(self.r.scan_iter(match=glob_escape(self.prefix) + "sq:*", count=1000)) if wanted else []
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
        return delete_matching(self.r, [glob_escape(self.prefix) + p for p in ("sk:*", "sq:*", "ski:*")],
                               [self.prefix + "skseq"])
