"""Dashboard: crawl and match counts, recent runs, matches per day per site, top sites."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from flask import Blueprint, current_app, render_template

from admin.db import get_store
from admin.queries import TTLCache
from admin.render import svg_stacked_bars

bp = Blueprint("dashboard", __name__, url_prefix="/dashboard")

CACHE_SECONDS = 60
RECENT = timedelta(hours=1)  # "found in the last hour": what watch mode caught just now


def admin_cache() -> TTLCache:
    """The app's cache of expensive numbers (dashboard aggregations, list totals)."""
    return current_app.extensions.setdefault("admin_cache", TTLCache())


def note_review(old: str | None, new: str) -> None:
    """Move the cached status counts with a review, so the dashboard follows it at once (and recount totals)."""
    def move(stats: dict) -> None:
        counts = stats.get("counts") or {}
        if old == new or f"matches_{new}" not in counts:
            return
        if counts.get(f"matches_{old}", 0) > 0:
            counts[f"matches_{old}"] -= 1
        counts[f"matches_{new}"] += 1

    admin_cache().update("stats", move)
    admin_cache().forget("count:")   # list totals by status are recounted


@bp.route("/")
def index() -> Any:
    """Today's picture; the aggregations are cached and refreshed in the background."""
    store = get_store()
    ttl = current_app.config.get("DASHBOARD_CACHE_SECONDS", CACHE_SECONDS)
    stats = admin_cache().get("stats", ttl, store.matches.dashboard_stats,
                         wait=current_app.config.get("DASHBOARD_WAIT_SECONDS", 1.0))
    chart = svg_stacked_bars(stats["days"], stats["series"]) if stats else None
    recent = store.watch.matches_since(datetime.now(timezone.utc) - RECENT)  # uncached: minutes matter here
    return render_template("dashboard/index.html", stats=stats, runs=store.runs.recent(10), chart=chart,
                           has_chart=bool(stats and stats["series"]), recent=recent)
