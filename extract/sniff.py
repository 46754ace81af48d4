"""The one content sniffer: is a body a web page at all (binary formats served as text/html, empty bodies)?

Spiders call it before any content work, extraction calls it before decoding; both name the same kinds.
"""
from __future__ import annotations

import codecs

# (file signature, kind, label) of formats that are never web pages, even when served as text/html.
MAGIC = (
    (b"\x89PNG", "png", "png image"), (b"\xff\xd8\xff", "jpeg", "jpeg image"), (b"GIF8", "gif", "gif image"),
    (b"%PDF", "pdf", "pdf document"), (b"PK\x03\x04", "zip", "zip archive"), (b"\x1f\x8b", "gzip", "gzip data"),
    (b"Rar!", "rar", "rar archive"), (b"7z\xbc\xaf", "7z", "7z archive"), (b"BZh", "bzip2", "bzip2 data"),
    (b"\x7fELF", "elf", "executable"), (b"MZ\x90\x00", "exe", "executable"), (b"RIFF", "riff", "riff media"),
    (b"ID3", "mp3", "mp3 audio"), (b"OggS", "ogg", "ogg media"), (b"\x00\x00\x01\x00", "icon", "icon"),
    (b"wOFF", "font", "font"), (b"wOF2", "font", "font"), (b"\xd0\xcf\x11\xe0", "ole2", "ms office"),
    (b"\x00\x00\x00", "iso-media", "iso media"),
)
LABELS = {kind: label for _, kind, label in MAGIC} | {"nul-bytes": "NUL bytes", "control-bytes": "control bytes"}
BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
HEAD = 4096


def binary_kind(body: bytes) -> str | None:
    """Short name of the binary format when the body is not text (magic number, NUL or control bytes)."""
    head = body[:HEAD]
    if not head or head.startswith(BOMS) or head.lstrip()[:1] == b"<":
        return None
    for magic, kind, _label in MAGIC:
        if head.startswith(magic):
            return kind
    if b"\x00" in head:
        return "nul-bytes"
    control = sum(1 for b in head if b < 9 or 13 < b < 32)
    return "control-bytes" if control > len(head) // 20 else None


def binary_reason(body: bytes) -> str | None:
    """A sentence for a person saying why these bytes are not a web page, or None."""
    kind = binary_kind(body)
    return f"binary content ({LABELS[kind]})" if kind else None


def is_empty(body: bytes) -> bool:
    """Nothing but whitespace."""
    return not body or not body.strip()
