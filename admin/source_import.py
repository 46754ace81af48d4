"""Registering works in the source library, shared by the CLI and the Sources page.

`register_source` is the one place a work enters the library (storage.sources.SourceLibrary cuts it
into segments and indexes their seeds for the matcher). Ids are stable: a .jsonl line's own id, or for
a .txt file a hash of its normalised text, so re-adding the same work never duplicates it.
"""
from __future__ import annotations

import re

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from fingerprint import content_hash
from storage.sources import SourceLibrary


MAX_WORK_CHARS = 20_000_000


class SourceError(ValueError):
    """A file or line that cannot be read as a work; the message says which and why."""


def work_id(text: str) -> str:
    """A stable id for a work without one: the fingerprint content hash of its normalised text."""
    return "txt-" + content_hash(text)[:20]


def text_work(name: str, raw: bytes | str) -> dict[str, Any]:
    """One work from a .txt: title from the first line (or the file name), id from the text."""
    text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    if not text.strip():
        raise SourceError(f"{name}: empty file")
    first = text.strip().splitlines()[0].strip()
    title = first if 0 < len(first) <= 80 else Path(name).stem
    return {"id": work_id(text), "title": title, "text": text, "origin": name}


def jsonl_works(name: str, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Works from .jsonl lines {id, title, text[, author, url]}; a bad line names its number."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{name}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or not obj["text"].strip():
            raise SourceError(f"{name}:{n}: needs a non-empty \"text\"")
        wid = obj.get("id")
        if wid is None or str(wid).strip() == "":
            raise SourceError(f"{name}:{n}: needs an \"id\"")
        title = obj.get("title") or obj.get("chapter_title") or str(wid)
        yield {"id": str(wid), "title": str(title), "text": obj["text"],
               "author": obj.get("author"), "url": obj.get("url"), "origin": f"{name}:{n}"}


def parse_upload(filename: str, data: bytes) -> list[dict[str, Any]]:
    """Works from an uploaded file (.txt or .jsonl), all parsed before anything is stored."""
    try:
        if filename.lower().endswith(".jsonl"):
            return list(jsonl_works(filename, data.decode("utf-8-sig").splitlines()))
        if filename.lower().endswith(".txt"):
            return [text_work(filename, data)]
    except UnicodeDecodeError:
        raise SourceError(f"{filename}: not UTF-8 text") from None
    raise SourceError(f"{filename}: only .txt and .jsonl files are accepted")


def load_paths(paths: Iterable[str]) -> list[dict[str, Any]]:
    """Every work under the given files/directories; fails before storing if any file is bad."""
    works: list[dict[str, Any]] = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.suffix.lower() in (".txt", ".jsonl") and f.is_file())
        elif p.is_file():
            files = [p]
        else:
            raise SourceError(f"{p}: no such file or directory")
        for f in files:
            try:
                data = f.read_bytes()
            except OSError as exc:
                raise SourceError(f"{f}: {exc.strerror}") from None
            works.extend(parse_upload(str(f), data))
    return works


SOURCE_ID = re.compile(r"\w(?:[\w.\-:/]{0,126}\w)?")


def check_source_id(sid: str) -> str:
    """Ids appear in forms and exports: letters (any script), digits and '_-.:/' inside; no '..', '//' or controls."""
    sid = sid.strip()
    if not SOURCE_ID.fullmatch(sid) or ".." in sid or "//" in sid:
        raise SourceError(f"source id {sid[:60]!r} may only hold letters, digits and '_', '-', '.', ':', '/' "
                          "(at most 128, starting and ending with a letter or digit, no '..' or '//')")
    return sid


def register_source(store: Any, id: str | None, text: str, title: str | None = None,
                    author: str | None = None, url: str | None = None) -> tuple[str, bool]:
    """Store one work (id derived from the text when missing), segmented and indexed for the matcher;
    returns (id, newly added)."""
    if not text or not text.strip():
        raise SourceError("a work needs text")
    if len(text) > MAX_WORK_CHARS:
        raise SourceError(f"work is larger than {MAX_WORK_CHARS} characters")
    work = text_work(title or "pasted.txt", text) if not id else {"id": check_source_id(str(id)), "title": title or id}
    sid = str(work["id"])
    added = SourceLibrary(store).register(sid, title or work["title"], text, author=author, url=url)
    return sid, bool(added)


def validate_works(works: list[dict[str, Any]]) -> None:
    """Check every work before any is stored (all or nothing); the SourceError names the file and line."""
    seen: dict[str, str] = {}
    for w in works:
        where = w.get("origin") or w.get("title") or "work"
        if not str(w.get("text") or "").strip():
            raise SourceError(f"{where}: a work needs text")
        if len(w["text"]) > MAX_WORK_CHARS:
            raise SourceError(f"{where}: work is larger than {MAX_WORK_CHARS} characters")
        if w.get("id"):
            try:
                sid = check_source_id(str(w["id"]))
            except SourceError as exc:
                raise SourceError(f"{where}: {exc}") from None
            if sid in seen:
                raise SourceError(f"{where}: id {sid!r} is already used by {seen[sid]}")
            seen[sid] = where


def register_works(store: Any, works: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """Validate every work, then store them all: [(id, title, newly added)] in order."""
    validate_works(works)
    out = []
    for w in works:
        fields = {k: v for k, v in w.items() if k != "origin"}
        sid, new = register_source(store, **fields)
        out.append((sid, str(w.get("title") or sid), new))
    return out
