"""The source library: registered works cut into segments, seeds in Redis, text in MongoDB.

A work (a novel, a news archive) is split into chapters/segments (`fingerprint.matcher.split_segments`);
each segment `"<work id>#<n>"` gets its seeds in the Redis seed index. Matching a page returns one
record per work, with spans in the work's own character offsets and a score per segment.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from fingerprint.matcher import CopyMatcher, MatchParams, split_segments

SEGMENT_SEP = "#"


def segment_id(source_id: str, n: int) -> str:
    """Id of segment n of a work."""
    return f"{source_id}{SEGMENT_SEP}{n}"


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


class SourceLibrary:
    """Register, remove and match works through one store (MongoDB for text, Redis for seeds)."""

    def __init__(self, store: Any, params: MatchParams | None = None, cache_size: int = 64) -> None:
        self.store = store
        self._works: OrderedDict[str, dict | None] = OrderedDict()
        self._cache_size = cache_size
        self.matcher = CopyMatcher(store.sources.seed_index(), self.segment_text, params)

    def register(self, source_id: str, title: str, text: str, author: str | None = None,
                 url: str | None = None) -> bool:
        """Store and index a work; False when the same text was already registered under this id."""
        old = self.store.sources.get(source_id)
        segments = [{"id": segment_id(source_id, i), "start": a, "end": b}
                    for i, (a, b) in enumerate(split_segments(text))]
        added = self.store.sources.add(source_id, title, text, author=author, url=url, segments=segments)
        if added:
            if old:
                self._unindex(old)
            for seg in segments:
                self.matcher.add_source(seg["id"], text[seg["start"]:seg["end"]])
            self._works.pop(source_id, None)
        return added

    def remove(self, source_id: str) -> bool:
        """Forget a work, its segments' seeds included."""
        self._works.pop(source_id, None)
        return self.store.sources.remove(source_id)

    def _unindex(self, work: dict) -> None:
        index = self.store.sources.seed_index()
        for seg in work.get("segments") or []:
            index.remove(seg["id"])

    def reindex(self, source_ids: list[str] | None = None) -> int:
        """Re-add every work's seeds (or these works') from MongoDB (after a Redis loss); returns segments indexed."""
        n = 0
        ids = [w["id"] for w in self.store.sources.all()] if source_ids is None else source_ids
        for source_id in ids:
            work = self.store.sources.get(source_id)
            for seg in (work or {}).get("segments") or []:
                self.matcher.add_source(seg["id"], work["text"][seg["start"]:seg["end"]])
                n += 1
        return n

    def _work(self, source_id: str) -> dict | None:
        if source_id in self._works:
            self._works.move_to_end(source_id)
            return self._works[source_id]
        work = self.store.sources.get(source_id)
        self._works[source_id] = work
        if len(self._works) > self._cache_size:
            self._works.popitem(last=False)
        return work

    def _segment(self, seg_id: str) -> tuple[dict, dict] | None:
        source_id, _, _ = seg_id.rpartition(SEGMENT_SEP)
        work = self._work(source_id)
        for seg in (work or {}).get("segments") or []:
            if seg["id"] == seg_id:
                return work, seg
        return None

    def segment_text(self, seg_id: str) -> str | None:
        """Text of one segment (the matcher's get_text)."""
        found = self._segment(seg_id)
        return found[0]["text"][found[1]["start"]:found[1]["end"]] if found else None

    def match(self, text: str) -> list[dict]:
        """One record per copied work: score (best segment's coverage), spans in work offsets."""
        works: dict[str, dict] = {}
        for m in self.matcher.match(text):
            found = self._segment(m.source_id)
            if found is None:
                continue
            work, seg = found
            rec = works.setdefault(work["id"], {
                "source_id": work["id"], "source_title": work.get("title"),
                "score": 0.0, "copied_chars": 0, "source_spans": [], "suspect_spans": [],
                "segments": [], "methods": m.methods, "work_chars": len(work["text"])})
            rec["score"] = max(rec["score"], m.source_coverage)
            rec["copied_chars"] += m.copied_chars
            rec["source_spans"] += [(s + seg["start"], e + seg["start"]) for s, e in m.source_spans]
            rec["suspect_spans"] += list(m.suspect_spans)
            rec["segments"].append({"id": m.source_id, "coverage": round(m.source_coverage, 4),
                                    "copied_chars": m.copied_chars})
        for rec in works.values():
            rec["source_spans"] = _merge(rec["source_spans"])
            rec["suspect_spans"] = _merge(rec["suspect_spans"])
            copied_in_work = sum(e - s for s, e in rec["source_spans"])
            rec["source_coverage"] = min(1.0, copied_in_work / max(1, rec.pop("work_chars")))
            rec["suspect_coverage"] = min(1.0, sum(e - s for s, e in rec["suspect_spans"]) / max(1, len(text)))
        return sorted(works.values(), key=lambda r: (-r["copied_chars"], r["source_id"]))
