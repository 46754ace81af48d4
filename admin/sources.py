"""Sources: the rights holder's registered works (list, add by upload or paste, remove)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for

from admin.db import get_store
from admin.source_import import SourceError, parse_upload, register_works
from admin.render import safe_href

bp = Blueprint("sources", __name__, url_prefix="/sources")


@bp.route("/")
def index() -> Any:
    """All registered works (text left out)."""
    return render_template("sources/index.html", sources=get_store().sources.all(), safe_href=safe_href)


@bp.route("/add", methods=["POST"])
def add() -> Any:
    """Register works from an uploaded .txt/.jsonl file or from pasted text."""
    store = get_store()
    upload = request.files.get("file")
    try:
        if upload and upload.filename:
            works = parse_upload(upload.filename, upload.read())
        else:
            text = request.form.get("text", "")
            title = request.form.get("title", "").strip()
            if not text.strip():
                raise SourceError("paste the text of the work or choose a file")
            works = [{"id": request.form.get("id", "").strip() or None, "title": title or None,
                      "text": text, "author": request.form.get("author", "").strip() or None,
                      "url": request.form.get("url", "").strip() or None}]
        results = register_works(store, works)
    except SourceError as exc:
        flash(f"Nothing added: {exc}", "error")
        return redirect(url_for("sources.index")), 303
    added = [title for _, title, new in results if new]
    named = f" Added: {', '.join(added[:20])}{' …' if len(added) > 20 else ''}." if added else ""
    flash(f"{len(added)} work(s) added, {len(results) - len(added)} already registered.{named}", "ok")
    return redirect(url_for("sources.index")), 303


@bp.route("/remove", methods=["POST"])
def remove() -> Any:
    """Remove a work from the library; the id travels in the form, never in the path ('..' cannot retarget it)."""
    store = get_store()
    source_id = request.form.get("id", "")
    if not source_id or len(source_id) > 200 or any(ord(c) < 32 for c in source_id):
        abort(400, description="give the id of the source to remove")
    if not store.sources.get(source_id):
        abort(404, description="no such source")
    store.sources.remove(source_id)
    flash(f"Source {source_id} removed.", "ok")
    return redirect(url_for("sources.index")), 303
