import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint import HammingIndex, SinglePass, hamming
from fingerprint.hamming_index import block_layout

u64 = st.integers(min_value=0, max_value=2 ** 64 - 1)


def _flip(fp: int, bits: list[int]) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


@settings(max_examples=60, deadline=None)
@given(base=st.lists(u64, min_size=1, max_size=40), bits=st.lists(st.integers(0, 63), max_size=5),
       k=st.integers(0, 6), bulk=st.booleans())
def test_query_equals_brute_force(base, bits, k, bulk):
    # near neighbours of the first fingerprint, so every distance 0..k+2 occurs
    fps = base + [_flip(base[0], bits[:i]) for i in range(len(bits) + 1)]
    index = HammingIndex(k, merge_at=7)
    if bulk:
        index.bulk(fps)
    else:
        for i, fp in enumerate(fps):
            index.add(fp, i)
    query = _flip(base[0], bits[:2])
    expected = sorted((hamming(fp, query), i) for i, fp in enumerate(fps) if hamming(fp, query) <= k)
    assert sorted((d, key) for key, d in index.query(query)) == expected


def test_remove_and_replace():
    index = HammingIndex(3)
    index.add(0b1111, "a")
    index.add(0b1110, "b")
    assert [key for key, _ in index.query(0b1111)] == ["a", "b"]
    assert index.remove("a") and not index.remove("a")
    assert index.query(0b1111) == [("b", 1)]
    index.add(2 ** 63, "b")  # re-adding a key replaces it
    assert index.query(0b1111) == [] and len(index) == 1


def test_large_bulk_index_matches_numpy_scan():
    rng = np.random.default_rng(7)
    fps = rng.integers(0, 2 ** 63, size=50_000, dtype=np.uint64) * 2
    index = HammingIndex(3)
    index.bulk(fps)
    for i in range(0, 50_000, 5_000):
        q = int(fps[i]) ^ 0b101
        dist = np.bitwise_count(fps ^ np.uint64(q))
        assert sorted(k for k, _ in index.query(q)) == sorted(np.flatnonzero(dist <= 3).tolist())
    assert index.memory_bytes() <= 4 * 8 * len(fps) + len(fps)


def test_block_layout_and_k_limits():
    assert block_layout(3) == [(0, 16), (16, 16), (32, 16), (48, 16)]
    assert sum(w for _, w in block_layout(5)) == 64
    with pytest.raises(ValueError):
        HammingIndex(3).query(0, k=4)


def test_single_pass_joins_nearest_centre():
    sp = SinglePass(k=3)
    assert sp.add("a", 0).duplicate_of is None
    joined = sp.add("b", 0b11)
    assert (joined.cluster, joined.distance) == ("a", 2)
    assert sp.add("c", 0xFFFF).duplicate_of is None
    assert sp.clusters == 2 and sp.sizes["a"] == 2


def test_adds_removes_and_merges_interleaved_equal_brute_force():
    """Removing a key still in the add buffer must not shift the rows merged after it."""
    rng = random.Random(3)
    idx = HammingIndex(3, merge_at=50)
    ref: dict[int, int] = {}
    for _ in range(4000):
        op = rng.random()
        if op < 0.6:
            key, fp = rng.randrange(800), rng.getrandbits(64)
            idx.add(fp, key)
            ref[key] = fp
        elif op < 0.75 and ref:
            key = rng.choice(list(ref))
            assert idx.remove(key)
            del ref[key]
        elif ref:
            q = rng.choice(list(ref.values())) ^ (1 << rng.randrange(64))
            want = sorted((key, bin(fp ^ q).count("1")) for key, fp in ref.items() if bin(fp ^ q).count("1") <= 3)
            assert sorted(idx.query(q)) == want
    assert len(idx) == len(ref)
