"""Crawl runs: each run's counts, and what became of every URL it touched (filter by outcome and reason)."""
from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, abort, render_template, request

from admin.db import get_store
from admin.queries import BadFilter, int_arg
from admin.render import safe_href
from storage.schema import OUTCOMES, is_oid_hex

bp = Blueprint("runs", __name__, url_prefix="/runs")
PER_PAGE = 100
REASON = re.compile(r"[a-z0-9_]{1,60}")


@bp.route("/")
def index() -> Any:
    """The last 50 runs, newest first."""
    return render_template("runs/list.html", runs=get_store().runs.recent(50))


@bp.route("/<run_id>/")
def outcomes(run_id: str) -> Any:
    """One run's outcomes by outcome and reason, and the URLs with the selected one (100 a page)."""
    if not is_oid_hex(run_id):
        abort(404)
    outcome, reason, page = _filters()
    store = get_store()
    rows = list(store.runs.find_outcomes(run_id, outcome or None, reason or None, None, PER_PAGE + 1,
                                    (page - 1) * PER_PAGE))
    return render_template("runs/outcomes.html", run_id=run_id, counts=store.runs.outcome_counts(run_id),
                           rows=rows[:PER_PAGE], more=len(rows) > PER_PAGE, outcome=outcome, reason=reason,
                           page=page, outcomes=OUTCOMES, safe_href=safe_href)


def _filters() -> tuple[str, str, int]:
    """outcome, reason and page from the query string; a 400 naming what is wrong otherwise."""
    outcome = request.args.get("outcome", "")
    if outcome and outcome not in OUTCOMES:
        abort(400, description=f"outcome must be one of {', '.join(OUTCOMES)}")
    reason = request.args.get("reason", "")
    if reason and not REASON.fullmatch(reason):
        abort(400, description="reason is a short slug of a-z, 0-9 and _")
    try:
        return outcome, reason, int_arg(request.args, "page", 1, 1, 10_000)
    except BadFilter as e:
        abort(400, description=str(e))
