"""Chinese tokens and their weights: the features a SimHash is built from.

The tokenizer is rjieba (jieba's dictionary and algorithm, in Rust, ~30x faster than jieba), or the
compiled segmenter that gives its tokens exactly (fingerprint/segmenter.py). rjieba is a hard dependency,
never a "use it if installed" choice: a different segmenter gives different tokens and so different
fingerprints. Weights are TF-IDF with jieba's IDF table (frozen since jieba 0.42.1)
or plain TF, rounded to integers so the SimHash sums are exact on every machine.

Per-token work is vectorised: the tokens are joined into one string, every token's 64-bit
hash is a polynomial hash of its code points computed with prefix sums (then mixed with splitmix64),
and IDF weights are found in a table keyed by the same hash, bucketed by its top 20 bits. Stopwords and tokens
without a letter, digit or Han character have weight 0.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import sys
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from fingerprint import segmenter
from fingerprint._tables import stopwords
from fingerprint.cache import cache_dir, digest, load_npz, save_atomic
from fingerprint.seeds import mix64

WEIGHT_SCALE = 1000
_SEP = b"\x00"  # never in normalised text: control characters are removed
_P = 0x100000001B3  # FNV-1a's 64-bit prime, as the polynomial base
_P_INV = pow(_P, -1, 2 ** 64)


@lru_cache(maxsize=8)
def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(P^j, P^-j) mod 2^64 for j < n, n rounded up to a power of two."""
    with np.errstate(over="ignore"):
        up = np.full(n, _P, dtype=np.uint64)
        down = np.full(n, _P_INV, dtype=np.uint64)
        up[0] = down[0] = 1
        up, down = np.cumprod(up, dtype=np.uint64), np.cumprod(down, dtype=np.uint64)
    return up, down


def _hash_segments(data: np.ndarray) -> np.ndarray:
    """Hashes of the 0-separated segments of data (code points): sum(c_j * P^(L-1-j)), then mixed."""
    seps = np.flatnonzero(data == 0)
    starts = np.concatenate([[0], seps + 1])
    ends = np.concatenate([seps, [len(data)]])
    size = 1 << max(1, int(len(data)).bit_length())
    up, down = _powers(size)
    with np.errstate(over="ignore"):
        prefix = np.zeros(len(data) + 1, dtype=np.uint64)
        np.cumsum(data.astype(np.uint64) * down[:len(data)], dtype=np.uint64, out=prefix[1:])
        raw = (prefix[ends] - prefix[starts]) * up[np.maximum(ends - 1, 0)]
    return mix64(raw)


def hash_text_tokens(tokens: Sequence[str]) -> np.ndarray:
    """Stable 64-bit hash of each token (tokens never contain NUL: see _SEP)."""
    if not tokens:
        return np.zeros(0, dtype=np.uint64)
    return _hash_segments(np.frombuffer("\x00".join(tokens).encode("utf-32-le", "surrogatepass"), dtype=np.uint32))


def idf_path() -> Path:
    """jieba's IDF table, found without importing jieba.analyse (which loads the POS tagger: ~0.2 s)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("jieba is not installed: its IDF table weights the SimHash tokens")
    return Path(list(spec.submodule_search_locations)[0]) / "analyse" / "idf.txt"


@lru_cache(maxsize=None)
def idf_lookup() -> tuple[np.ndarray, np.ndarray, float]:
    """(sorted token hashes, their IDF, median IDF): jieba's IDF table, 0 for non-content tokens."""
    words, values = [], []
    for line in idf_path().read_text(encoding="utf-8").splitlines():
        word, _, value = line.partition(" ")
        if value and "\x00" not in word:
            words.append(word)
            values.append(float(value))
    median = float(np.median(values))
    zero = sorted(stopwords() | _non_content_chars())
    hashes = np.concatenate([hash_text_tokens(words), hash_text_tokens(zero)])
    idf = np.concatenate([np.array(values), np.zeros(len(zero))])
    # later entries win: a stopword or punctuation listed in idf.txt still gets weight 0
    order = np.argsort(hashes, kind="stable")
    hashes, idf = hashes[order], idf[order]
    last = np.concatenate([hashes[1:] != hashes[:-1], [True]])
    return hashes[last], idf[last], median


def _non_content_chars() -> set[str]:
    """Single characters that carry no content: neither letter, digit nor Han, or a lone ASCII letter."""
    out = set()
    for cp in range(1, 0x10000):
        ch = chr(cp)
        if 0xD800 <= cp < 0xE000:
            continue
        if not ch.isalnum() and ch != "_" or ch.isascii():
            out.add(ch)
    return out


BUCKET_BITS = 20


IDF_TABLE_VERSION = "1"  # bump when the token hash or the table's layout changes


def _cache_file() -> Path:
    """Where the built IDF table is kept, named by a digest of everything it is built from."""
    parts = (IDF_TABLE_VERSION.encode(), unicodedata.unidata_version.encode(), idf_path().read_bytes(),
             "\n".join(sorted(stopwords())).encode("utf-8"), str(BUCKET_BITS).encode())
    return cache_dir() / f"idf-{digest(parts)}.npz"


@lru_cache(maxsize=None)
def idf_buckets() -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    """The bucketed IDF table: built once per machine (~0.6 s), then loaded from a versioned cache file."""
    try:
        path = _cache_file()
        z = load_npz(path, ("keys", "values", "starts", "median", "widest"))
        return (z["keys"], z["values"], _starts(z["starts"]), float(z["median"]), int(z["widest"]))
    except (OSError, ValueError, KeyError):
        pass
    table = build_idf_buckets()
    _save(path, table)
    return table


def _save(path: Path, table: tuple) -> None:
    """Write the cache atomically; a read-only home only costs the build next time."""
    keys, values, starts, median, widest = table
    save_atomic(path, lambda f: np.savez(f, keys=keys, values=values, starts=starts, median=median, widest=widest))


def build_idf_buckets() -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    """The IDF table by its hashes' top bits: start of each bucket, and the largest bucket."""
    keys, values, median = idf_lookup()
    bucket = (keys >> np.uint64(64 - BUCKET_BITS)).astype(np.int64)
    starts = np.searchsorted(bucket, np.arange((1 << BUCKET_BITS) + 1))
    widest = int(np.diff(starts).max())
    # padded so a probe past the last key reads a sentinel instead of running off the end
    pad_keys = np.concatenate([keys, np.zeros(widest, dtype=np.uint64)])
    pad_values = np.concatenate([values, np.zeros(widest)])
    return pad_keys, pad_values, _starts(starts), median, widest


def _starts(starts: np.ndarray) -> np.ndarray:
    """Bucket starts as uint32 (the table has ~350,000 keys): 4 MB where int64 took 8, and loaded from the
    cache file as stored, without a copy."""
    if len(starts) and int(starts[-1]) >= 2 ** 32:
        raise ValueError("IDF table too large for uint32 bucket starts")
    return starts if starts.dtype == np.uint32 else starts.astype(np.uint32)


def idf_of(hashes: np.ndarray) -> np.ndarray:
    """IDF of each token hash: jieba's value, the median for unknown words, 0 for non-content."""
    keys, values, starts, median, widest = idf_buckets()
    b = (hashes >> np.uint64(64 - BUCKET_BITS)).astype(np.int64)
    pos, end = starts[b], starts[b + 1]
    out = np.full(len(hashes), median)
    for _ in range(widest):  # buckets hold 0-3 keys: a few vectorised probes
        hit = (pos < end) & (keys[pos] == hashes)
        out[hit] = values[pos[hit]]
        pos = pos + 1
    return out


def check_weighting(weighting: str) -> None:
    """A clear error for a weighting other than 'tfidf' or 'tf'."""
    if weighting not in ("tfidf", "tf"):
        raise ValueError(f"unknown weighting {weighting!r}: use 'tfidf' or 'tf'")


def _jieba_class() -> type:
    """rjieba's Jieba class, without running rjieba/__init__.py when it can: that builds a default instance
    with the whole dictionary (~0.1 s of every start-up) which the project never uses, as each Tokenizer
    builds its own. The extension module is registered as rjieba.rjieba, so a later `import rjieba` uses it."""
    with _JIEBA_LOCK:  # two threads must not both load it (an extension module initialises once)
        return _load_jieba_class()


_JIEBA_LOCK = threading.Lock()


def _load_jieba_class() -> type:
    if "rjieba" not in sys.modules and "rjieba.rjieba" not in sys.modules:
        try:
            spec = importlib.util.find_spec("rjieba")  # a top-level package: found, not run
            folder = list(spec.submodule_search_locations or [])[0] if spec else None
            loaders = (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES)
            ext = importlib.machinery.FileFinder(folder, loaders).find_spec("rjieba.rjieba") if folder else None
            if ext is not None and ext.loader is not None:
                module = importlib.util.module_from_spec(ext)
                sys.modules["rjieba.rjieba"] = module
                try:
                    ext.loader.exec_module(module)
                except BaseException:
                    del sys.modules["rjieba.rjieba"]
                    raise
        except (ImportError, OSError, IndexError):
            pass
    module = sys.modules.get("rjieba.rjieba")
    if module is None or not hasattr(module, "Jieba"):
        import rjieba as module  # the ordinary import (rjieba's layout changed): one more dictionary load
    return module.Jieba


class Tokenizer:
    """rjieba segmentation with optional user words (novel characters, place names).

    Without user words it cuts with the compiled segmenter when it is built (fingerprint/segmenter.py:
    the same tokens, 1.7-2x faster, no rjieba dictionary to load); rjieba stays the reference and fallback."""

    def __init__(self, user_words: Iterable[str] = ()) -> None:
        self._words = sorted({w.strip() for w in user_words if w and w.strip()})
        self._rjieba = None
        self._compiled = not self._words and segmenter.available()
        if not self._compiled:
            self._rjieba = self._reference()
        digest = hashlib.blake2b("\n".join(self._words).encode(), digest_size=4).hexdigest()
        self.id = "rjieba0.2" + (f"+user{digest}" if self._words else "")

    def _reference(self) -> object:
        """rjieba's Jieba with this tokenizer's user words: the reference cut, and the cut with user words."""
        jieba = _jieba_class()()
        for word in self._words:
            jieba.add_word(word, None, None)
        return jieba

    @property
    def compiled(self) -> bool:
        """Whether cut() is the compiled segmenter's (no user words, extension built)."""
        return self._compiled

    @property
    def _jieba(self) -> object:
        """rjieba's Jieba with this tokenizer's words, made on first use when the compiled cut is used
        (two threads may both make one: the same dictionary, one is dropped)."""
        if self._rjieba is None:
            self._rjieba = self._reference()
        return self._rjieba

    def cut(self, normalized: str) -> list[str]:
        """All tokens of a normalised text, punctuation included."""
        if self._compiled:
            return segmenter.cut(normalized)
        return self._rjieba.cut(normalized, True)

    def tokens(self, normalized: str) -> list[str]:
        """Content tokens of a normalised text in order: stopwords and punctuation removed."""
        cut = self.cut(normalized)
        keep = idf_of(hash_text_tokens(cut)) > 0
        return [t for t, k in zip(cut, keep.tolist()) if k]

    def hashed_weights(self, normalized: str, weighting: str = "tfidf") -> tuple[np.ndarray, np.ndarray]:
        """(uint64 token hashes, int64 weights) of the distinct content tokens.

        Weights are TF-IDF or TF, scaled by WEIGHT_SCALE and rounded, so sums are exact integers.
        """
        return hashed_token_weights(self.cut(normalized), weighting)

    def weights(self, normalized: str, weighting: str = "tfidf") -> dict[str, int]:
        """Token -> integer weight, for people and tests (SimHash uses hashed_weights)."""
        tokens = sorted(set(self.tokens(normalized)))
        by_hash = dict(zip(hash_text_tokens(tokens).tolist(), tokens))
        hashes, w = self.hashed_weights(normalized, weighting)
        return {by_hash[h]: v for h, v in zip(hashes.tolist(), w.tolist())}


def hashed_token_weights(tokens: Sequence[str], weighting: str = "tfidf") -> tuple[np.ndarray, np.ndarray]:
    """(uint64 hashes, int64 weights) of the distinct content tokens of a cut (see Tokenizer.hashed_weights)."""
    check_weighting(weighting)
    hashes, counts = np.unique(hash_text_tokens(tokens), return_counts=True)
    idf = idf_of(hashes)
    content = idf > 0
    weight = counts * (idf if weighting == "tfidf" else 1.0)
    return hashes[content], np.rint(weight[content] * WEIGHT_SCALE).astype(np.int64)


def token_hash(token: str) -> int:
    """Stable 64-bit hash of one token (hash_text_tokens of a single token)."""
    return int(hash_text_tokens([token])[0])


@lru_cache(maxsize=1)
def default_tokenizer() -> Tokenizer:
    """The shared tokenizer without user words."""
    return Tokenizer()
