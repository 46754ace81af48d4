"""Turning match data into safe HTML pieces: highlighted passages, links, and an inline SVG chart.

Nothing here builds HTML from crawled text by string concatenation without escaping: templates get
plain data (autoescaped there), and the SVG chart escapes every label with markupsafe.
"""
from __future__ import annotations

from typing import Any, Sequence
from urllib.parse import urlsplit

from markupsafe import Markup, escape

#: bidi embeddings, overrides, isolates and marks: crawled text could reorder what a reviewer reads
BIDI_CONTROLS = dict.fromkeys([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])


def strip_bidi(value: Any) -> Any:
    """Every value a template prints, without bidi controls (Jinja's finalize; Markup stays Markup)."""
    if isinstance(value, Markup):
        return Markup(str(value).translate(BIDI_CONTROLS))
    if isinstance(value, str):
        return value.translate(BIDI_CONTROLS)
    return value


PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#7f7f7f")


def clean_spans(spans: Any, length: int) -> list[tuple[int, int]]:
    """Valid [start, end) spans clipped to the text, sorted, overlaps merged; junk ignored."""
    out: list[tuple[int, int]] = []
    for sp in spans or []:
        try:
            s, e = int(sp[0]), int(sp[1])
        except (TypeError, ValueError, IndexError):
            continue
        s, e = max(0, s), min(length, e)
        if e > s:
            out.append((s, e))
    out.sort()
    merged: list[tuple[int, int]] = []
    for s, e in out:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def highlight_parts(text: str, spans: Any) -> list[dict[str, Any]]:
    """Split text into plain and marked parts; marked ones are numbered 1..n with a 'next' number."""
    merged = clean_spans(spans, len(text))
    parts: list[dict[str, Any]] = []
    pos = 0
    for i, (s, e) in enumerate(merged, 1):
        if s > pos:
            parts.append({"text": text[pos:s], "mark": False})
        parts.append({"text": text[s:e], "mark": True, "n": i,
                      "next": i + 1 if i < len(merged) else None})
        pos = e
    if pos < len(text):
        parts.append({"text": text[pos:], "mark": False})
    return parts


def span_number(spans: Any, length: int, start: int) -> int | None:
    """Which merged mark (1-based) contains the given offset, for the passage table's links."""
    for i, (s, e) in enumerate(clean_spans(spans, length), 1):
        if s <= start < e:
            return i
    return None


def passages(match: dict, source_text: str, suspect_text: str, max_chars: int = 2000) -> list[dict]:
    """The matched passages as pairs (source span, suspect span, and their text) for tables/exports."""
    src = match.get("source_spans") or []
    sus = match.get("suspect_spans") or []
    out = []
    for i in range(max(len(src), len(sus))):
        row: dict[str, Any] = {"n": i + 1}
        for side, spans, text in (("source", src, source_text), ("suspect", sus, suspect_text)):
            sp = clean_spans([spans[i]] if i < len(spans) else [], len(text) or 10**12)
            row[f"{side}_span"] = list(sp[0]) if sp else None
            row[f"{side}_text"] = text[sp[0][0]:sp[0][1]][:max_chars] if sp and text else ""
            row[f"{side}_mark"] = span_number(spans, len(text), sp[0][0]) if sp and text else None
        out.append(row)
    return out


def safe_href(url: Any) -> str | None:
    """The URL when it is plain http(s); None for javascript:, data: and everything else."""
    if not isinstance(url, str):
        return None
    u = url.strip()
    if any(ord(c) < 32 for c in u):
        return None
    try:
        parts = urlsplit(u)
    except ValueError:
        return None
    if parts.scheme.lower() in ("http", "https") and parts.netloc:
        return u
    return None


def svg_stacked_bars(days: Sequence[str], series: dict[str, list[int]], width: int = 760,
                     height: int = 220) -> Markup:
    """Matches per day per site as a stacked bar chart in inline SVG (no JS, no CDN)."""
    left, bottom, top = 40, 30, 10
    plot_w, plot_h = width - left - 10, height - bottom - top
    totals = [sum(s[i] for s in series.values()) for i in range(len(days))]
    peak = max(totals + [1])
    bar_w = plot_w / max(len(days), 1)
    out = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height + 20 * ((len(series) + 3) // 4)}" '
           f'xmlns="http://www.w3.org/2000/svg"><title>Matches per day per site</title>',
           f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" stroke="#999"/>',
           f'<text x="{left - 4}" y="{top + 8}" text-anchor="end" font-size="10">{peak}</text>',
           f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end" font-size="10">0</text>']
    for i, day in enumerate(days):
        y = top + plot_h
        for j, (site, counts) in enumerate(series.items()):
            n = counts[i]
            if not n:
                continue
            h = plot_h * n / peak
            y -= h
            out.append(f'<rect x="{left + i * bar_w + 1:.1f}" y="{y:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                       f'height="{h:.1f}" fill="{PALETTE[j % len(PALETTE)]}">'
                       f'<title>{escape(day)} {escape(site)}: {n}</title></rect>')
        if i % 5 == 0:
            out.append(f'<text x="{left + i * bar_w:.1f}" y="{height - 12}" font-size="10">'
                       f'{escape(day[5:])}</text>')
    for j, site in enumerate(series):
        x, y = left + (j % 4) * 180, height + 8 + 20 * (j // 4)
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>'
                   f'<text x="{x + 14}" y="{y}" font-size="11">{escape(site[:28])}</text>')
    out.append("</svg>")
    return Markup("".join(out))
