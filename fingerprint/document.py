"""All fingerprints of one document in one pass: what the crawler stores for every page."""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from fingerprint import synonyms
from fingerprint.dna import DEFAULT_PARAMS, DnaParams, dna, letter_stream
from fingerprint.exact import content_hash
from fingerprint.normalize import normalize
from fingerprint.seeds import smallest_seeds
from fingerprint.simhash import canonical_simhash_of, simhash
from fingerprint.tokens import Tokenizer, default_tokenizer
from fingerprint.version import FINGERPRINT_VERSION, fingerprint_version


@dataclass(frozen=True)
class Fingerprints:
    """SimHash (uint64), exact-content hash (32 hex), DNA windows, normalised length, version, passage sketch."""

    simhash: int
    content_hash: str
    dna: tuple[int, ...]
    length: int
    version: str = FINGERPRINT_VERSION
    sketch: tuple[int, ...] = ()


def fingerprint_text(text: str, weighting: str = "tfidf", tokenizer: Tokenizer | None = None,
                     dna_params: DnaParams | None = DEFAULT_PARAMS, sketch_size: int = 0) -> Fingerprints:
    """Normalise once, then SimHash, exact hash, DNA (none when dna_params is None) and the passage sketch
    (`sketch_size` values; with synonyms on, from the same cut as the SimHash: one tokenizer pass a page)."""
    norm = normalize(text)
    return fingerprint_normalized(text, norm, content_hash(norm, normalized=True), weighting, tokenizer,
                                  dna_params, sketch_size)


def fingerprint_normalized(text: str, norm: str, content: str, weighting: str = "tfidf",
                           tokenizer: Tokenizer | None = None, dna_params: DnaParams | None = DEFAULT_PARAMS,
                           sketch_size: int = 0) -> Fingerprints:
    """fingerprint_text of text whose normalised form and content hash the caller already has (the batch
    dedup computes them first: an exact copy needs nothing more)."""
    on = synonyms.enabled()
    if on:
        sh, canonical = canonical_simhash_of(norm, tokenizer or default_tokenizer(), weighting)
        sk = smallest_seeds(_remember(text, canonical).codes, sketch_size) if sketch_size else []
    else:
        sh = simhash(norm, weighting, tokenizer, normalized=True)
        sk = smallest_seeds(letter_stream(text)[0], sketch_size) if sketch_size else []
    return Fingerprints(simhash=sh, content_hash=content,
                        dna=dna(norm, dna_params) if dna_params is not None else (), length=len(norm),
                        version=fingerprint_version(on), sketch=tuple(sk))


@dataclass(frozen=True)
class CanonicalLetters:
    """A text's canonical form for the passage step: its normalised tokens with synonyms canonicalised,
    joined, and that string's pinyin letters with their offsets in it."""

    text: str
    codes: np.ndarray
    offsets: np.ndarray


_RECENT: OrderedDict[str, CanonicalLetters] = OrderedDict()
_RECENT_SIZE = 512   # pages (~18 KB each): a page's letters serve its sketch, then its passage checks
_RECENT_LOCK = threading.Lock()


def keep_recent(pages: int) -> None:
    """Keep the canonical letters of the last `pages` pages (a batch dedup keeps more than a crawl process:
    a page's passage check against one not kept cuts and canonicalises that page again)."""
    global _RECENT_SIZE
    with _RECENT_LOCK:
        _RECENT_SIZE = max(1, pages)
        while len(_RECENT) > _RECENT_SIZE:
            _RECENT.popitem(last=False)


def _remember(text: str, canonical: str) -> CanonicalLetters:
    """The canonical letters of text, kept for its passage checks."""
    codes, offsets = letter_stream(canonical)
    letters = CanonicalLetters(canonical, codes, offsets.astype(np.int32))
    with _RECENT_LOCK:
        _RECENT[text] = letters
        if len(_RECENT) > _RECENT_SIZE:
            _RECENT.popitem(last=False)
    return letters


def canonical_letters(text: str) -> CanonicalLetters:
    """canonical letters of text (synonyms on): those fingerprint_text just computed, or computed now."""
    with _RECENT_LOCK:
        found = _RECENT.get(text)
        if found is not None:
            _RECENT.move_to_end(text)
            return found
    return _remember(text, "".join(synonyms.canonical_tokens(default_tokenizer().cut(normalize(text)))))


def text_sketch(text: str, size: int) -> list[int]:
    """The `size` smallest seed hashes of a text's letters: of its canonical normalised tokens with synonyms
    on (what fingerprint_text computes), of the text itself with them off (the sketch before issue 27)."""
    return smallest_seeds(canonical_letters(text).codes if synonyms.enabled() else letter_stream(text)[0], size)
