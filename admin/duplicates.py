"""Duplicates: clusters of near-duplicate pages (the kept original and the copies dropped)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, render_template, request

from admin import get_store
from admin.render import safe_href

bp = Blueprint("duplicates", __name__, url_prefix="/duplicates")


@bp.route("/")
def index() -> Any:
    """Searchable (URL, title, site) list of clusters, newest copy first."""
    q = request.args.get("q", "").strip()[:200]
    raw = request.args.get("page", "1")
    if not raw.isdigit() or not 1 <= int(raw) <= 10_000:
        abort(400, description="page must be a whole number between 1 and 10000")
    page = int(raw)
    clusters, more = get_store().duplicate_clusters(q, page)
    return render_template("duplicates/index.html", clusters=clusters, more=more, q=q, page=page,
                           safe_href=safe_href)
