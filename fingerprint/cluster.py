"""Single-Pass clustering over a stream of fingerprints (seed 001, section 3.3)."""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from fingerprint.hamming_index import HammingIndex


@dataclass(frozen=True)
class Assignment:
    """Where one document went: its cluster (the centre's key) and its distance to the centre."""

    key: Hashable
    cluster: Hashable
    duplicate_of: Hashable | None
    distance: int


class SinglePass:
    """Each document joins the nearest cluster centre within k bits, or starts a new cluster.

    Only centres are indexed (the seed's DistSet), so the index grows with the distinct documents,
    not with the stream.
    """

    def __init__(self, k: int = 3, index: HammingIndex | None = None) -> None:
        self.k = k
        self.index = index if index is not None else HammingIndex(k)
        self.sizes: dict[Hashable, int] = {}

    def add(self, key: Hashable, fp: int) -> Assignment:
        """Place one document; returns its cluster and, for a copy, the centre it copies."""
        near = self.index.nearest(fp, self.k)
        if near is None:
            self.index.add(fp, key)
            self.sizes[key] = 1
            return Assignment(key, key, None, 0)
        centre, distance = near
        self.sizes[centre] += 1
        return Assignment(key, centre, centre, distance)

    @property
    def clusters(self) -> int:
        return len(self.sizes)
