"""Slot markers of a Redis Cluster index: which slots came back empty after a node lost its data.

One server says a data loss by its owner key (identity.owner_key) being gone. A cluster node that restarts
empty (no persistence, a wiped disk) takes only its own slots with it, and the owner key may live on another
node. So every slot holds a marker (``<prefix>alive:{tag}``, tag chosen to hash to that slot), written once
the index is whole; a script on any index key also reads the marker of the key's slot and says "lost"
instead of deciding when it is gone (redis_index/lua/guard.lua). Markers are written after a repair only.
"""
from __future__ import annotations

from binascii import crc_hqx
from functools import cache
from typing import Any

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

BATCH = 4096   # commands per pipeline round


@cache
def slot_tags() -> tuple[str, ...]:
    """A short hash tag for each of the 16384 slots (tags[s] hashes to slot s), found by counting up."""
    tags: list[bytes | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
    left, i = REDIS_CLUSTER_HASH_SLOTS, 0
    while left:
        tag = b"%x" % i
        slot = crc_hqx(tag, 0) % REDIS_CLUSTER_HASH_SLOTS   # key_slot of a tag without braces
        if tags[slot] is None:
            tags[slot] = tag
            left -= 1
        i += 1
    return tuple(t.decode() for t in tags if t is not None)


class SlotMarkers:
    """The per-slot markers of one key prefix on a Redis Cluster."""

    def __init__(self, client: Any, prefix: str) -> None:
        self.r = client
        self.prefix = prefix

    def key_for(self, key: str | bytes) -> str:
        """The marker in the same slot as `key` (a script may read both)."""
        raw = key.encode() if isinstance(key, str) else key
        return self._key(slot_tags()[key_slot(raw)])

    def _key(self, tag: str) -> str:
        return f"{self.prefix}alive:{{{tag}}}"

    def _each(self, command: str) -> list[Any]:
        """Run one command on every slot's marker, pipelined; the replies in slot order."""
        keys = [self._key(t) for t in slot_tags()]
        out: list[Any] = []
        for start in range(0, len(keys), BATCH):
            pipe = self.r.pipeline(transaction=False)
            for key in keys[start:start + BATCH]:
                getattr(pipe, command)(*((key, 1) if command == "set" else (key,)))
            out.extend(pipe.execute())
        return out

    def missing(self) -> int:
        """How many slots lost their marker (0: every slot is as the last repair left it)."""
        return sum(1 for n in self._each("exists") if not n)

    def mark(self) -> None:
        """Every slot whole: called once the index was repaired from MongoDB, never before."""
        self._each("set")

    def clear(self) -> None:
        """Take every marker out (a rebuild starts: a check meanwhile says "lost")."""
        self._each("unlink")
