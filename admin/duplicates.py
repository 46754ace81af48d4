"""Duplicates: clusters of near-duplicate pages (the kept original and the copies dropped)."""
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
                           safe_href=safe_href, match_of=store.match_ids_for_urls(urls))
