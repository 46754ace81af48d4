"""Chinese text fingerprints: SimHash, pinyin-initial DNA, exact hashes, Hamming index, copy matcher.

A pure library: text in, fingerprints out, plus in-memory indexes. No network, no database, no
Scrapy, no Flask. Deterministic across processes and machines (see fingerprint/version.py).
"""
from fingerprint.cluster import Assignment, SinglePass
from fingerprint.dna import DnaParams, dna, dna_containment
from fingerprint.document import Fingerprints, fingerprint_text
from fingerprint.exact import content_hash
from fingerprint.hamming_index import HammingIndex
from fingerprint.normalize import normalize
from fingerprint.simhash import hamming, simhash, similarity, to_signed, to_unsigned
from fingerprint.tokens import Tokenizer
from fingerprint.version import FINGERPRINT_VERSION
from fingerprint._tables import t2s_map as t2s_table   # traditional -> simplified, char for char (extract.script)

__all__ = [
    "Assignment", "DnaParams", "FINGERPRINT_VERSION", "Fingerprints", "HammingIndex", "SinglePass",
    "Tokenizer", "content_hash", "dna", "dna_containment", "fingerprint_text", "hamming", "normalize",
    "simhash", "similarity", "t2s_table", "to_signed", "to_unsigned",
]
