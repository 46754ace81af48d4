"""JSON API for scripts and pages: matches (filtered, cursor paged), one match, sources.

Auth is the session cookie of a logged-in user; without it every endpoint answers 401.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Blueprint, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from admin.db import get_store
from admin.queries import BadFilter, parse_match_query
from admin.matches import LIST_FIELDS, texts_for
from admin.render import passages
from storage.schema import is_oid

bp = Blueprint("api", __name__, url_prefix="/api")


def jsonable(v: Any) -> Any:
    """Mongo documents to plain JSON (ObjectId -> str, datetime -> ISO 8601)."""
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if is_oid(v):
        return str(v)
    if isinstance(v, datetime):
        return v.isoformat()
    return v


@bp.app_errorhandler(HTTPException)
def _json_error(exc: HTTPException) -> Any:
    """Under /api every error (404 of an unknown path, 405, 400, a 500) answers JSON; elsewhere a styled page."""
    if not request.path.startswith("/api/"):
        from admin.errors import error_page

        return error_page(exc)
    code = exc.code or 500
    message = exc.description if code < 500 else "internal error; see the server log"
    return jsonify(error=message), code


@bp.route("/matches")
def matches() -> Any:
    """{items: [...], next: cursor|null}; same filters as the list page."""
    from admin.matches import exact_site

    try:
        mq = exact_site(parse_match_query(request.args, current_app.config["PER_PAGE"]))
    except BadFilter as exc:
        return jsonify(error=str(exc)), 400
    docs, nxt = get_store().matches.find(mq, LIST_FIELDS)
    return jsonify(items=[jsonable({**d, "id": str(d["_id"])}) for d in docs], next=nxt)


@bp.route("/matches/<match_id>")
def match(match_id: str) -> Any:
    """One match with its passages' text."""
    from admin.matches import load_match

    m = load_match(match_id)
    src_text, sus_text, _, _ = texts_for(m)
    return jsonify(jsonable({**m, "id": str(m["_id"]), "passages": passages(m, src_text, sus_text)}))


@bp.route("/sources")
def sources() -> Any:
    """The source library without texts."""
    items = [{k: v for k, v in s.items() if k not in ("text", "segments")} for s in get_store().sources.all()]
    return jsonify(items=jsonable(items))
