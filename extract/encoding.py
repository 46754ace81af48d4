"""Bytes -> text for Chinese pages: BOM, HTTP charset, <meta charset>, then detection; the bytes decide.

Why: Chinese sites declare GB2312 while sending GBK/GB18030 characters, declare GB2312 while sending
UTF-8, and send Big5 with HKSCS characters.  A wrong guess turns the whole page into mojibake, which
then fingerprints as a different text.  Rules (in order):

1. A byte-order mark wins.
2. If the bytes are valid UTF-8 and contain multi-byte sequences, it is UTF-8, whatever is declared:
   GBK/Big5 text is practically never valid UTF-8, while UTF-8 text often decodes "fine" as GB18030
   (mojibake without errors), so UTF-8 must be tested first.
3. The HTTP Content-Type charset, then the <meta> charset, if the bytes decode under it without error.
   Declared GB2312/GBK are decoded as GB18030 (a superset), Big5 as Big5-HKSCS.  Big5 bytes almost
   always decode "fine" as GB18030 too, so when both decode, detection decides between them.
4. Otherwise charset_normalizer's best guess, then GB18030 with replacement characters.
"""
from __future__ import annotations

import codecs
import re

# Declared names -> the superset codec we decode with.
SUPERSETS = {
    "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "gb_2312-80": "gb18030",
    "cp936": "gb18030", "euc-cn": "gb18030", "hz-gb-2312": "gb18030", "gb18030": "gb18030",
    "big5": "big5hkscs", "big5-hkscs": "big5hkscs", "cp950": "big5hkscs", "x-x-big5": "big5hkscs",
    "utf8": "utf-8", "unicode-1-1-utf-8": "utf-8", "iso-8859-1": "cp1252", "latin-1": "cp1252",
    "us-ascii": "utf-8", "ascii": "utf-8",
}
BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
META_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
HEADER_RE = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)

CJK_PAIR = {"gb18030": "big5hkscs", "big5hkscs": "gb18030"}


def canonical(name: str | None) -> str | None:
    """A Python codec name for a declared charset (superset for GB2312/GBK/Big5), or None if unknown."""
    if not name:
        return None
    name = name.strip().strip("\"'").lower()
    name = SUPERSETS.get(name, name)
    try:
        return codecs.lookup(name).name if name not in ("gb18030", "big5hkscs") else name
    except LookupError:
        return None


def decodes(data: bytes, encoding: str) -> bool:
    """True if the bytes decode without error (a cut multi-byte character at the very end is allowed)."""
    try:
        codecs.getincrementaldecoder(encoding)("strict").decode(data, final=False)
        return True
    except (UnicodeDecodeError, LookupError):
        return False


def declared(data: bytes, headers: dict | None) -> tuple[str | None, str | None]:
    """(HTTP charset, <meta> charset) as declared, canonicalised."""
    http = None
    for key, value in (headers or {}).items():
        if str(key).lower() == "content-type":
            m = HEADER_RE.search(str(value))
            http = canonical(m.group(1)) if m else None
    m = META_RE.search(data[:8192])
    meta = canonical(m.group(1).decode("ascii", "ignore")) if m else None
    return http, meta


def detect(data: bytes) -> str:
    """Best guess for undeclared or wrongly declared bytes (charset_normalizer on the first 64 KB)."""
    try:
        from charset_normalizer import from_bytes
        best = from_bytes(data[:65536], cp_isolation=["gb18030", "big5", "utf_8", "cp1252"]).best()
        if best is not None:
            return canonical(best.encoding) or "gb18030"
    except ImportError:  # pragma: no cover - charset_normalizer ships with requests/scrapy
        pass
    return "gb18030"


def choose_encoding(data: bytes, headers: dict | None = None) -> str:
    """The codec to decode this page with (see the module docstring for the order)."""
    for bom, name in BOMS:
        if data.startswith(bom):
            return name
    if not data.isascii() and decodes(data, "utf-8"):
        return "utf-8"
    for candidate in declared(data, headers):
        if candidate and decodes(data, candidate):
            other = CJK_PAIR.get(candidate)
            if other and decodes(data, other):
                return detect(data)  # GBK vs Big5 ambiguous in these bytes: the declaration may be wrong
            return candidate
    if data.isascii():
        return "utf-8"
    gb, big5 = decodes(data, "gb18030"), decodes(data, "big5hkscs")
    if gb != big5:
        return "gb18030" if gb else "big5hkscs"
    return detect(data)


def decode(data: bytes, headers: dict | None = None) -> tuple[str, str]:
    """(text, encoding used); undecodable bytes become U+FFFD rather than failing."""
    encoding = choose_encoding(data, headers)
    return data.decode(encoding, errors="replace"), encoding
