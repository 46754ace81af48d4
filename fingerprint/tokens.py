"""Chinese tokens and their weights: the features a SimHash is built from.

The tokenizer is rjieba (jieba's dictionary and algorithm, in Rust, ~30x faster than jieba). It is a
hard dependency, never a "use it if installed" choice: a different segmenter gives different tokens
and so different fingerprints. Weights are TF-IDF with jieba's IDF table (frozen since jieba 0.42.1)
or plain TF, rounded to integers so the SimHash sums are exact on every machine.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources

import numpy as np
import rjieba
import xxhash

from fingerprint._tables import stopwords

WEIGHT_SCALE = 1000
_CONTENT = re.compile(r"[\w]", re.UNICODE)
_ASCII_WORD = re.compile(r"^[a-z0-9_.]+$")


@lru_cache(maxsize=None)
def idf_table() -> tuple[dict[str, float], float]:
    """jieba's IDF table and its median, the weight of words it does not know."""
    path = resources.files("jieba.analyse").joinpath("idf.txt")
    table: dict[str, float] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        word, _, value = line.partition(" ")
        if value:
            table[word] = float(value)
    values = sorted(table.values())
    return table, values[len(values) // 2]


class Tokenizer:
    """rjieba segmentation with optional user words (novel characters, place names)."""

    MEMO_LIMIT = 1_000_000

    def __init__(self, user_words: Iterable[str] = ()) -> None:
        words = sorted({w.strip() for w in user_words if w and w.strip()})
        self._jieba = rjieba.Jieba()
        for word in words:
            self._jieba.add_word(word, None, None)
        digest = hashlib.blake2b("\n".join(words).encode(), digest_size=4).hexdigest()
        self.id = "rjieba0.2" + (f"+user{digest}" if words else "")
        self._reset_memo()

    def _reset_memo(self) -> None:
        # token -> row in the feature arrays; rows hold the token's stable hash and IDF (0: not content)
        self._row: dict[str, int] = {}
        self._hash = np.zeros(1024, dtype=np.uint64)
        self._idf = np.zeros(1024, dtype=np.float64)

    def _add(self, token: str) -> int:
        """Row of token, created on first sight."""
        row = self._row.get(token)
        if row is not None:
            return row
        row = len(self._row)
        if row == len(self._hash):
            self._hash = np.resize(self._hash, 2 * row)
            self._idf = np.resize(self._idf, 2 * row)
        self._row[token] = row
        self._hash[row] = token_hash(token)
        self._idf[row] = self._idf_of(token)
        return row

    @staticmethod
    def _idf_of(token: str) -> float:
        """IDF of a content token; 0 for stopwords, punctuation and stray letters."""
        if token in stopwords() or not _CONTENT.search(token) or (
                len(token) == 1 and _ASCII_WORD.match(token)):
            return 0.0
        idf, median = idf_table()
        return idf.get(token, median)

    def _rows(self, tokens: Iterable[str]) -> np.ndarray:
        if len(self._row) > self.MEMO_LIMIT:
            self._reset_memo()
        tokens = list(tokens)
        rows = list(map(self._row.get, tokens))
        if None in rows:
            rows = [self._add(t) if r is None else r for t, r in zip(tokens, rows)]
        return np.array(rows, dtype=np.int64)

    def tokens(self, normalized: str) -> list[str]:
        """Content tokens of a normalised text in order: stopwords and punctuation removed."""
        cut = self._jieba.cut(normalized, True)
        rows = self._rows(cut)  # may grow the arrays: index them only afterwards
        keep = self._idf[rows] > 0
        return [t for t, k in zip(cut, keep) if k]

    def hashed_weights(self, normalized: str, weighting: str = "tfidf") -> tuple[np.ndarray, np.ndarray]:
        """(uint64 token hashes, int64 weights) of the distinct content tokens.

        Weights are TF-IDF or TF, scaled by WEIGHT_SCALE and rounded, so sums are exact integers.
        """
        rows, counts = np.unique(self._rows(self._jieba.cut(normalized, True)), return_counts=True)
        idf = self._idf[rows]
        tf = counts.astype(np.float64)
        if weighting == "tfidf":
            tf *= idf
        elif weighting != "tf":
            raise ValueError(f"unknown weighting {weighting!r}: use 'tfidf' or 'tf'")
        content = idf > 0
        return self._hash[rows][content], np.rint(tf[content] * WEIGHT_SCALE).astype(np.int64)

    def weights(self, normalized: str, weighting: str = "tfidf") -> dict[str, int]:
        """Token -> integer weight, for people and tests (SimHash uses hashed_weights)."""
        content = sorted(set(self.tokens(normalized)), key=self._row.__getitem__)
        _, w = self.hashed_weights(normalized, weighting)
        return dict(zip(content, w.tolist()))


def token_hash(token: str) -> int:
    """Stable 64-bit hash of a token (xxh64, seed 0): the same on every machine, forever."""
    return xxhash.xxh64_intdigest(token.encode("utf-8"))


@lru_cache(maxsize=1)
def default_tokenizer() -> Tokenizer:
    """The shared tokenizer without user words."""
    return Tokenizer()
