"""64-bit SimHash (Charikar; Manku et al.) over weighted tokens, vectorised with numpy."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fingerprint import segmenter, speedups, synonyms
from fingerprint.normalize import normalize
from fingerprint.tokens import (BUCKET_BITS, Tokenizer, check_weighting, default_tokenizer, hashed_token_weights,
                                idf_buckets, token_hash)

BITS = 64
_SHIFTS = np.arange(BITS, dtype=np.uint64)
MASK64 = (1 << BITS) - 1


def simhash_hashed(hashes: np.ndarray, weights: np.ndarray) -> int:
    """SimHash of hashed features: per bit, + weight where the feature's bit is 1, - where it is 0."""
    if len(hashes) == 0:
        return 0
    bits = np.unpackbits(hashes.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    totals = 2 * (weights @ bits.astype(np.int64)) - int(weights.sum())
    return int(np.bitwise_or.reduce((totals > 0).astype(np.uint64) << _SHIFTS))


def simhash_weights(weights: Mapping[str, int]) -> int:
    """SimHash of a token -> integer weight mapping."""
    hashes = np.fromiter((token_hash(t) for t in weights), dtype=np.uint64, count=len(weights))
    return simhash_hashed(hashes, np.fromiter(weights.values(), dtype=np.int64, count=len(weights)))


def simhash(text: str, weighting: str = "tfidf", tokenizer: Tokenizer | None = None,
            normalized: bool = False) -> int:
    """64-bit SimHash of a text (unsigned int)."""
    tok = tokenizer or default_tokenizer()
    norm = text if normalized else normalize(text)
    if synonyms.enabled():   # 讯息 and 消息 are one feature (fingerprint/synonyms.py)
        return canonical_simhash_of(norm, tok, weighting)[0]
    return simhash_tokens(tok.cut(norm), weighting, numpy_only="\x00" in norm)


def simhash_tokens(cut: list[str], weighting: str = "tfidf", numpy_only: bool = False) -> int:
    """SimHash of a tokenizer's cut (stopwords and punctuation weigh 0)."""
    kernel = speedups.KERNEL
    if kernel is None or numpy_only:  # NUL splits tokens in the numpy hash; normalize removes it
        return simhash_hashed(*hashed_token_weights(cut, weighting))
    check_weighting(weighting)
    keys, values, starts, median, _ = idf_buckets()
    return kernel.simhash_tokens(cut, keys, values, starts, BUCKET_BITS, median, weighting == "tfidf")


def canonical_simhash(cut: list[str], weighting: str = "tfidf", numpy_only: bool = False) -> tuple[int, str]:
    """(SimHash, joined text) of the cut with synonyms canonicalised: one compiled pass that hashes each
    token once where it can, else canonical_tokens, simhash_tokens and a join (the reference: same values)."""
    kernel = speedups.KERNEL
    if kernel is None or numpy_only or not hasattr(kernel, "canonical_simhash"):
        canonical = synonyms.canonical_tokens(cut)
        return simhash_tokens(canonical, weighting, numpy_only), "".join(canonical)
    check_weighting(weighting)
    keys, values, starts, median, _ = idf_buckets()
    return kernel.canonical_simhash(cut, synonyms.kernel_table(), keys, values, starts, BUCKET_BITS, median,
                                    weighting == "tfidf")


def canonical_simhash_of(norm: str, tokenizer: Tokenizer, weighting: str = "tfidf") -> tuple[int, str]:
    """canonical_simhash(tokenizer.cut(norm)): when the tokenizer cuts with the compiled segmenter, straight
    from the cut's token ends, without ~1,650 token objects a page (tests compare both ways)."""
    kernel = speedups.KERNEL   # None when the kernels are switched off (tests compare both ways)
    if kernel is None or not tokenizer.compiled or "\x00" in norm:
        return canonical_simhash(tokenizer.cut(norm), weighting, numpy_only="\x00" in norm)
    check_weighting(weighting)
    keys, values, starts, median, _ = idf_buckets()
    return kernel.canonical_simhash_text(segmenter.table(), norm, synonyms.kernel_table(), keys, values, starts,
                                         BUCKET_BITS, median, weighting == "tfidf")


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit fingerprints."""
    return ((a ^ b) & MASK64).bit_count()


def similarity(a: int, b: int) -> float:
    """1 - Hamming distance / 64."""
    return 1.0 - hamming(a, b) / BITS


def to_signed(fp: int) -> int:
    """uint64 -> int64, for stores without an unsigned 64-bit type (MongoDB)."""
    return fp - (1 << 64) if fp >= (1 << 63) else fp


def to_unsigned(value: int) -> int:
    """int64 -> uint64, the inverse of to_signed."""
    return value & MASK64
