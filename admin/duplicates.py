"""Duplicates: clusters of near-duplicate pages (the kept original and the copies dropped), and a copy's
sentences aligned with its original's (issue 27: how a rewrite was spun)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, render_template, request

from admin.db import get_store
from admin.queries import BadFilter, int_arg
from admin.render import safe_href

bp = Blueprint("duplicates", __name__, url_prefix="/duplicates")


@bp.route("/")
def index() -> Any:
    """Searchable (URL, title, site) list of clusters, newest copy first; copies link their match."""
    q = request.args.get("q", "").strip()[:200]
    try:
        page = int_arg(request.args, "page", 1, 1, 10_000)
    except BadFilter as e:
        abort(400, description=str(e))
    store = get_store()
    clusters, more = store.duplicate_clusters(q, page)
    urls = [u for c in clusters for u in [c.get("original_url")] + [d.get("url") for d in c["copies"]] if u]
    return render_template("duplicates/index.html", clusters=clusters, more=more, q=q, page=page,
                           safe_href=safe_href, match_of=store.matches.ids_for_urls(urls))


def copy_text(d: dict) -> tuple[str, str]:
    """The copy's text and where it came from: its record (rewrites keep theirs), else the text kept by a match
    of its URL (the evidence snapshot first), else none."""
    if d.get("text"):
        return str(d["text"]), "record"
    from admin.matches import suspect_view

    store = get_store()
    match_id = store.matches.ids_for_urls([d.get("url")]).get(d.get("url"))
    match = store.matches.get(match_id) if match_id else None
    text = suspect_view(match)["text"] if match else ""
    return text, "match" if text else "none"


@bp.route("/<dup_id>/sentences")
def sentences(dup_id: str) -> Any:
    """The original's and the copy's sentences side by side, swapped words marked (a rewrite read)."""
    from admin.sentences import pair_view

    store = get_store()
    d = store.get_duplicate(dup_id) if 0 < len(dup_id) <= 200 else None
    if d is None:
        abort(404, description="no such copy record")
    original = store.get_page(d.get("original_id")) or {}
    text, origin = copy_text(d)
    original_text = str(original.get("text") or "")
    return render_template("duplicates/sentences.html", d=d, copy_origin=origin, original_text=bool(original_text),
                           pv=pair_view(original_text, text))
