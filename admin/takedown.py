"""Takedown notices from confirmed matches: one per infringing site, in Chinese (《信息网络传播权保护条例》
第十四条) and English (DMCA-style), as Markdown, plain text or HTML. Used by the Notices pages
(admin/notices.py), `python -m admin notices` (admin/notices_cli.py) and notice packs (admin/evidence_pack.py).

A notice lists the rights holder, the works, every infringing URL with its matched passages and the
SHA-256 of the suspect text (the evidence store's digest when the match has one), and the date. It is
stored with the matches it covers (storage/notices.py), so the same match is never noticed twice.
"""
from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2

FORMATS = ("md", "txt", "html")
LANGS = ("both", "zh", "en")
MAX_PASSAGES = 5        # passages quoted per URL (the digest covers the whole text)
PASSAGE_CHARS = 120     # characters quoted per passage
PROBES = 3              # passages whose absence later means "content gone"
PROBE_CHARS = 24
TEMPLATES = Path(__file__).with_name("templates") / "notices"


class NoticeError(ValueError):
    """Nothing to put in a notice (no confirmed match for the site), said in one line."""


def evidence_digest(match: dict) -> tuple[str, str]:
    """(SHA-256 hex of the suspect text, where it came from): the evidence store's, else computed here;
    ("", "unavailable") for a match recorded without its text (never the digest of an empty string)."""
    stored = (match.get("evidence") or {}).get("text_sha256")
    if stored:
        return stored, "evidence store"
    if not match.get("suspect_text"):
        return "", "unavailable"
    return hashlib.sha256(match["suspect_text"].encode("utf-8")).hexdigest(), "suspect text"


def passages(match: dict, limit: int = MAX_PASSAGES, width: int = PASSAGE_CHARS) -> list[dict]:
    """The matched spans of the suspect text, longest first, each quoted up to `width` characters."""
    text = match.get("suspect_text") or ""
    spans = sorted((tuple(s) for s in match.get("suspect_spans") or []), key=lambda s: (s[0] - s[1], s[0]))
    out = []
    for start, end in spans[:limit]:
        quote = " ".join(text[start:end].split())  # one line per passage, whatever the page's line breaks
        out.append({"start": start, "end": end, "chars": end - start,
                    "text": quote if len(quote) <= width else quote[:width] + "…"})
    return sorted(out, key=lambda p: p["start"])


def probes(match: dict) -> list[str]:
    """Short passages from the earliest matched spans (the first page of a multi-page chapter)."""
    text = match.get("suspect_text") or ""
    out = []
    for start, end in sorted(tuple(s) for s in match.get("suspect_spans") or []):
        snippet = "".join(text[start:end].split())[:PROBE_CHARS]
        if len(snippet) >= 8:
            out.append(snippet)
        if len(out) >= PROBES:
            break
    return out


def notice_item(match: dict) -> dict:
    """One infringing URL of a notice."""
    digest, origin = evidence_digest(match)
    return {"match_id": match["_id"], "url": match["suspect_url"], "title": match.get("title"),
            "source_id": match["source_id"], "source_title": match.get("source_title"),
            "score": match.get("score"), "text_sha256": digest, "digest_from": origin,
            "passages": passages(match), "found": match.get("created")}


def draft_notice(store: Any, site: str, holder: str | None = None, contact: str | None = None,
                 address: str | None = None) -> tuple[dict, list[dict]]:
    """The notice a site's confirmed matches not noticed yet would make, not stored: (notice, matches).
    NoticeError when there is none."""
    matches = store.notices.unnoticed_confirmed_matches(site)
    if not matches:
        raise NoticeError(f"no confirmed match for site {site!r} that a notice does not cover yet: confirm matches "
                          f"in the admin first (sites with confirmed matches: "
                          f"{', '.join(s['site'] for s in store.notices.sites()) or 'none'})")
    works: dict[str, dict] = {}
    for m in matches:
        src = store.sources.get(m["source_id"]) or {}
        works.setdefault(m["source_id"], {"source_id": m["source_id"], "title": src.get("title") or m.get("source_title"),
                                          "author": src.get("author"), "url": src.get("url"),
                                          "holder": src.get("rights_holder") or src.get("author")})
    holders = sorted({w["holder"] for w in works.values() if w["holder"]})
    notice = {"site": site, "rights_holder": holder or "、".join(holders) or "（权利人）",
              "contact": contact or "", "address": address or "",
              "works": sorted(works.values(), key=lambda w: w["source_id"]), "items": [notice_item(m) for m in matches],
              "created": datetime.now(timezone.utc)}
    return notice, matches


def build_notice(store: Any, site: str, holder: str | None = None, contact: str | None = None,
                 address: str | None = None) -> tuple[dict, bool]:
    """The notice for a site's confirmed matches not noticed yet (stored), or the latest one when every
    confirmed match is already covered: (notice, created now). NoticeError when there is nothing."""
    try:
        notice, matches = draft_notice(store, site, holder, contact, address)
    except NoticeError:
        latest = store.notices.of_site(site, limit=1)
        if latest:
            return latest[0], False
        raise
    nid = store.notices.save(notice, {m["suspect_url"]: probes(m) for m in matches})
    if holder and (contact or address):
        store.notices.save_holder(holder, contact or "", address or "")
    return store.notices.get(nid), True


def render_notice(notice: dict, fmt: str = "md", lang: str = "both") -> str:
    """The notice as Markdown, plain text or a standalone HTML page, in Chinese, English or both."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    if lang not in LANGS:
        raise ValueError(f"language must be one of {LANGS}, not {lang!r}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=fmt == "html",
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    template = env.get_template("notice.html" if fmt == "html" else "notice.txt")
    return template.render(n=notice, md=fmt == "md", langs=("zh", "en") if lang == "both" else (lang,),
                           date=notice["created"].strftime("%Y-%m-%d"))
