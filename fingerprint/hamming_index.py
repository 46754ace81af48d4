"""Exact in-memory index of 64-bit fingerprints: every stored fingerprint within k bits of a query.

Pigeonhole (Manku et al., seed 002): split the 64 bits into k+1 blocks; two fingerprints within k
bits agree exactly on at least one block. Each block has a table sorted by the block's value, so a
query is k+1 binary searches plus a vectorised popcount over the candidates. Memory is the
fingerprints (8 bytes) plus per block a sorted value (2 bytes at k=3) and a row id (4 bytes):
32 bytes per fingerprint at k=3, 4x the fingerprints. Recent additions wait in a small buffer and
are merged into the sorted tables in bulk, so single adds stay cheap.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np

BITS = 64


def block_layout(k: int) -> list[tuple[int, int]]:
    """(shift, width) of each of the k+1 blocks, widths as equal as possible."""
    if not 0 <= k < BITS:
        raise ValueError("k must be in 0..63")
    n = k + 1
    widths = [BITS // n + (1 if i < BITS % n else 0) for i in range(n)]
    shifts = [sum(widths[:i]) for i in range(n)]
    return list(zip(shifts, widths))


def _value_dtype(width: int) -> type:
    return np.uint8 if width <= 8 else np.uint16 if width <= 16 else np.uint32 if width <= 32 else np.uint64


class HammingIndex:
    """Fingerprints within Hamming distance k, with add, remove, query and bulk build."""

    def __init__(self, k: int = 3, merge_at: int = 4096) -> None:
        self.k = k
        self.layout = block_layout(k)
        self._merge_at = merge_at
        self._fps = np.zeros(0, dtype=np.uint64)
        self._alive = np.zeros(0, dtype=bool)
        self._keys: list[Hashable] = []
        self._row_of: dict[Hashable, int] = {}
        self._values = [np.zeros(0, dtype=_value_dtype(w)) for _, w in self.layout]
        self._rows = [np.zeros(0, dtype=np.uint32) for _ in self.layout]
        self._pending: dict[int, int] = {}  # row -> fingerprint, not yet merged into the sorted tables
        self._pending_blocks: list[dict[int, list[int]]] = [{} for _ in self.layout]
        self._dead = 0

    def __len__(self) -> int:
        return len(self._keys) - self._dead

    def __contains__(self, key: Hashable) -> bool:
        return key in self._row_of

    def _block(self, fp: int, i: int) -> int:
        shift, width = self.layout[i]
        return (fp >> shift) & ((1 << width) - 1)

    def add(self, fp: int, key: Hashable) -> None:
        """Store fingerprint fp under key (a key added twice replaces its fingerprint)."""
        if key in self._row_of:
            self.remove(key)
        row = len(self._keys)
        self._keys.append(key)
        self._row_of[key] = row
        self._pending[row] = fp
        for i, blocks in enumerate(self._pending_blocks):
            blocks.setdefault(self._block(fp, i), []).append(row)
        if len(self._pending) >= max(self._merge_at, len(self._fps) // 8):
            self._merge()

    def bulk(self, fps: Sequence[int] | np.ndarray, keys: Iterable[Hashable] | None = None) -> None:
        """Add many fingerprints at once (keys default to 0, 1, 2, ... in order)."""
        arr = np.asarray(fps, dtype=np.uint64)
        start = len(self._keys)
        new_keys = list(range(start, start + len(arr))) if keys is None else list(keys)
        if len(new_keys) != len(arr):
            raise ValueError("fps and keys differ in length")
        for key in new_keys:
            if key in self._row_of:
                self.remove(key)
        self._merge()
        for offset, key in enumerate(new_keys):
            self._row_of[key] = start + offset
        self._keys.extend(new_keys)
        self._fps = np.concatenate([self._fps, arr])
        self._alive = np.concatenate([self._alive, np.ones(len(arr), dtype=bool)])
        self._rebuild_tables()

    def remove(self, key: Hashable) -> bool:
        """Forget key; False when it was not there."""
        row = self._row_of.pop(key, None)
        if row is None:
            return False
        self._dead += 1
        if row < len(self._alive):
            self._alive[row] = False
        # a pending row stays in the buffer (rows must stay contiguous): query skips it, _merge marks it dead
        return True

    def query(self, fp: int, k: int | None = None) -> list[tuple[Hashable, int]]:
        """(key, distance) of every stored fingerprint within k bits of fp, nearest first."""
        k = self.k if k is None else k
        if k > self.k:
            raise ValueError(f"this index answers k <= {self.k}")
        hits = self._table_hits(fp, k) | self._pending_hits(fp, k)
        return [(self._keys[r], d) for d, r in sorted(hits) if self._row_of.get(self._keys[r]) == r]

    def nearest(self, fp: int, k: int | None = None) -> tuple[Hashable, int] | None:
        """The closest stored key within k bits, or None."""
        found = self.query(fp, k)
        return found[0] if found else None

    def _table_hits(self, fp: int, k: int) -> set[tuple[int, int]]:
        """(distance, row) within k among the merged rows: binary searches in the sorted block tables."""
        if len(self._fps) == 0:   # everything still in the buffer (a run of under merge_at pages)
            return set()
        parts = []
        for i, values in enumerate(self._values):
            key = values.dtype.type(self._block(fp, i))  # same dtype, or numpy would convert the whole table
            lo = np.searchsorted(values, key, "left")
            hi = np.searchsorted(values, key, "right")
            if hi > lo:
                parts.append(self._rows[i][lo:hi])
        if not parts:
            return set()
        rows = np.concatenate(parts)  # a row may repeat (it shares several blocks): the set dedups
        dist = np.bitwise_count(self._fps[rows] ^ np.uint64(fp))
        close = dist <= k
        return set(zip(dist[close].tolist(), rows[close].tolist()))

    def _pending_hits(self, fp: int, k: int) -> set[tuple[int, int]]:
        """(distance, row) within k among the buffered rows: a few per block, counted with plain ints (numpy's
        per-call cost was most of a query while every row was still in the buffer)."""
        hits: set[tuple[int, int]] = set()
        if not self._pending:
            return hits
        fp = int(fp)
        for i, blocks in enumerate(self._pending_blocks):
            for row in blocks.get(self._block(fp, i), ()):
                d = (int(self._pending[row]) ^ fp).bit_count()
                if d <= k:
                    hits.add((d, row))
        return hits

    def _merge(self) -> None:
        if not self._pending:
            return
        self._fps = np.concatenate([self._fps, np.fromiter(self._pending.values(), dtype=np.uint64,
                                                           count=len(self._pending))])
        self._alive = np.concatenate([self._alive, np.ones(len(self._pending), dtype=bool)])
        for row in range(len(self._alive) - len(self._pending), len(self._alive)):
            if self._row_of.get(self._keys[row]) != row:
                self._alive[row] = False
        self._pending = {}
        self._pending_blocks = [{} for _ in self.layout]
        self._rebuild_tables()

    def _rebuild_tables(self) -> None:
        live = np.flatnonzero(self._alive).astype(np.uint32)
        for i, (shift, width) in enumerate(self.layout):
            values = ((self._fps[live] >> np.uint64(shift)) & np.uint64((1 << width) - 1))
            order = np.argsort(values, kind="stable")
            self._values[i] = values[order].astype(_value_dtype(width))
            self._rows[i] = live[order]

    def memory_bytes(self) -> int:
        """Bytes held by the numpy tables (the keys list is the caller's objects)."""
        return int(self._fps.nbytes + self._alive.nbytes
                   + sum(v.nbytes for v in self._values) + sum(r.nbytes for r in self._rows))
