"""Watch list page: add or remove the sites `python -m crawler watch` re-visits, each with its interval."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for

from admin.db import get_store

bp = Blueprint("watch", __name__, url_prefix="/watch")

KINDS = ("auto", "toc", "feed", "sitemap", "page")


@bp.route("/")
def index() -> Any:
    """The watch list: URL, kind, interval, last round and its outcome, next round."""
    return render_template("watch/index.html", watches=get_store().watch.all(), kinds=KINDS)


@bp.route("/add", methods=["POST"])
def add() -> Any:
    """Add a URL (or change its interval and kind); bad input is flashed, not stored."""
    form = request.form
    try:
        interval = float(form.get("interval") or 300)
        watch = get_store().watch.add(form.get("url", ""), interval=interval, kind=form.get("kind") or "auto")
    except ValueError as exc:
        flash(f"not added: {exc}", "error")
        return redirect(url_for("watch.index"))
    flash(f"watching {watch['url']} every {watch['interval']:g} s", "ok")
    return redirect(url_for("watch.index"))


@bp.route("/remove", methods=["POST"])
def remove() -> Any:
    """Stop watching a URL."""
    url = request.form.get("url", "")
    removed = get_store().watch.remove(url)
    flash(f"removed {url}" if removed else f"{url} was not watched", "ok" if removed else "error")
    return redirect(url_for("watch.index"))
