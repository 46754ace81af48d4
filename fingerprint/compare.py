"""The comparison methods the seeds discuss, for the benchmarks and `python -m fingerprint compare`.

k-shingle Jaccard (seed 001's baseline), MinHash (datasketch, the maintained implementation) with
LSH banding, the top-5 longest sentences signature (seed 003), winnowing of character k-grams
(seed 000). All work on the normalised text; all are deterministic (stable hashes, never the salted built-in).
"""
from __future__ import annotations

import hashlib

import numpy as np
import xxhash

from fingerprint.normalize import compact, normalize, sentences
from fingerprint.seeds import winnow

SHINGLE_K = 5
MINHASH_PERM = 128


def shingles(text: str, k: int = SHINGLE_K, normalized: bool = False) -> set[str]:
    """Character k-shingles of the normalised text without spaces and punctuation."""
    s = compact(text if normalized else normalize(text))
    return {s[i:i + k] for i in range(max(1, len(s) - k + 1))} if s else set()


def jaccard(a: set, b: set) -> float:
    """|A & B| / |A | B|."""
    return len(a & b) / len(a | b) if a or b else 1.0


def shingle_jaccard(a: str, b: str, k: int = SHINGLE_K) -> float:
    """Jaccard similarity of two texts' character k-shingles."""
    return jaccard(shingles(a, k), shingles(b, k))


def _xxh32(data: bytes) -> int:
    return xxhash.xxh32_intdigest(data)


def minhash(text: str, num_perm: int = MINHASH_PERM, k: int = SHINGLE_K):
    """datasketch MinHash of the character shingles (seeded, xxh32: stable across processes)."""
    from datasketch import MinHash  # imported here: datasketch loads its optional Redis backend

    m = MinHash(num_perm=num_perm, seed=1, hashfunc=_xxh32)
    m.update_batch([s.encode("utf-8") for s in shingles(text, k)])
    return m


def top_sentences_signature(text: str, n: int = 5) -> str:
    """Seed 003: MD5 of the n longest sentences, joined in text order."""
    sents = sentences(normalize(text))
    longest = sorted(range(len(sents)), key=lambda i: (-len(sents[i]), i))[:n]
    joined = "|".join(compact(sents[i]) for i in sorted(longest))
    return hashlib.md5(joined.encode("utf-8")).hexdigest()


def winnowing_fingerprints(text: str, k: int = 8, w: int = 8) -> set[int]:
    """Winnowed xxh64 hashes of character k-grams (seed 000, Schleimer et al.)."""
    s = compact(normalize(text))
    if len(s) < k:
        return {xxhash.xxh64_intdigest(s.encode("utf-8"))} if s else set()
    hashes = np.array([xxhash.xxh64_intdigest(s[i:i + k].encode("utf-8"))
                       for i in range(len(s) - k + 1)], dtype=np.uint64)
    return set(hashes[winnow(hashes, w)].tolist())


def containment(a: set, b: set) -> float:
    """|A & B| / min(|A|, |B|): how much of the smaller set the other contains."""
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0
