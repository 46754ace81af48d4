"""Page ids and fingerprints as the index stores them: compact bytes, bucket and field of a content hash."""
from __future__ import annotations

import re

MASK64 = (1 << 64) - 1
_HEX_ID = re.compile(r"[0-9a-f]{24}|[0-9a-f]{32}")
_RAW_LENGTHS = (12, 16)


def encode_id(page_id: str) -> bytes:
    """Compact Redis form of a page id: raw bytes for a 24- or 32-hex id (ObjectId, 128-bit hash)."""
    if _HEX_ID.fullmatch(page_id):
        return bytes.fromhex(page_id)
    enc = b"~" + page_id.encode("utf-8")
    return b"\0" + enc if len(enc) in _RAW_LENGTHS else enc


def decode_id(raw: bytes) -> str:
    """Inverse of encode_id."""
    if len(raw) in _RAW_LENGTHS:
        return raw.hex()
    return raw[2:].decode("utf-8") if raw.startswith(b"\0~") else raw[1:].decode("utf-8")


def exact_key_parts(content_hash: str) -> tuple[str, bytes]:
    """Bucket (first 3 hex) and field (bytes 2..9) of a content hash in the ex: hashes (68 bits in all)."""
    h = content_hash.lower()
    if len(h) < 18 or not re.fullmatch(r"[0-9a-f]+", h):
        raise ValueError(f"content_hash must be a hex string of at least 18 digits, got {content_hash!r}")
    return h[:3], bytes.fromhex(h[4:18])


def fp_bytes(simhash: int) -> bytes:
    """8-byte big-endian form of an unsigned 64-bit SimHash."""
    if not 0 <= simhash <= MASK64:
        raise ValueError(f"simhash must be an unsigned 64-bit int, got {simhash!r}")
    return simhash.to_bytes(8, "big")
