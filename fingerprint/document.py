"""All fingerprints of one document in one pass: what the crawler stores for every page."""
from __future__ import annotations

from dataclasses import dataclass

from fingerprint.dna import DEFAULT_PARAMS, DnaParams, dna
from fingerprint.exact import content_hash
from fingerprint.normalize import normalize
from fingerprint.simhash import simhash
from fingerprint.tokens import Tokenizer
from fingerprint.version import FINGERPRINT_VERSION


@dataclass(frozen=True)
class Fingerprints:
    """SimHash (uint64), exact-content hash (32 hex), DNA windows, normalised length, version."""

    simhash: int
    content_hash: str
    dna: tuple[int, ...]
    length: int
    version: str = FINGERPRINT_VERSION


def fingerprint_text(text: str, weighting: str = "tfidf", tokenizer: Tokenizer | None = None,
                     dna_params: DnaParams | None = DEFAULT_PARAMS) -> Fingerprints:
    """Normalise once, then SimHash, exact hash and DNA (no DNA windows when dna_params is None)."""
    norm = normalize(text)
    return Fingerprints(
        simhash=simhash(norm, weighting, tokenizer, normalized=True),
        content_hash=content_hash(norm, normalized=True),
        dna=dna(norm, dna_params) if dna_params is not None else (),
        length=len(norm),
    )
