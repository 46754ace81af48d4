"""Exact-content hash: 128-bit BLAKE2b of the normalised text without spaces or punctuation."""
from __future__ import annotations

import hashlib

from fingerprint.normalize import compact, normalize


def content_hash(text: str, normalized: bool = False) -> str:
    """32 hex characters; equal for texts that differ only in layout, script, width or punctuation."""
    norm = text if normalized else normalize(text)
    return hashlib.blake2b(compact(norm).encode("utf-8"), digest_size=16).hexdigest()
