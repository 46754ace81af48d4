"""The admin's Notices pages: sites with confirmed matches, a notice's preview, creation, display and
"sent" record (the notices themselves: admin/takedown.py)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, abort, flash, g, redirect, render_template, request, url_for

from admin.db import get_store
from admin.takedown import FORMATS, NoticeError, build_notice, draft_notice, render_notice

bp = Blueprint("notices", __name__, url_prefix="/notices")


@bp.route("/")
def index() -> Any:
    """Sites with confirmed matches, their notices, and the follow-up of every noticed URL."""
    store = get_store()
    return render_template("notices/index.html", sites=store.notices.sites(), notices=store.notices.of_site(),
                           takedowns=store.notices.takedowns(), holders=store.notices.holders())


CHANNELS = ("e-mail", "web form", "post", "fax", "other")


def _holder_form() -> dict[str, str]:
    """The rights holder fields of the make-notice form, trimmed and capped."""
    form = request.form
    return {"site": (form.get("site") or "").strip()[:200], "holder": (form.get("holder") or "").strip()[:200],
            "contact": (form.get("contact") or "").strip()[:500], "address": (form.get("address") or "").strip()[:500]}


@bp.route("/preview", methods=["POST"])
def preview() -> Any:
    """The notice as it would go out, before anything is stored; "Create" stores it."""
    fields = _holder_form()
    try:
        notice, _ = draft_notice(get_store(), fields["site"], fields["holder"] or None, fields["contact"] or None,
                                 fields["address"] or None)
    except NoticeError as exc:
        flash(str(exc), "error")
        return redirect(url_for("notices.index")), 303
    return render_template("notices/preview.html", fields=fields, n=notice, text=render_notice(notice, "txt"))


@bp.route("/create", methods=["POST"])
def create() -> Any:
    """The "create" button of the preview: a notice for the site's confirmed matches not noticed yet."""
    fields = _holder_form()
    try:
        notice, created = build_notice(get_store(), fields["site"], fields["holder"] or None,
                                       fields["contact"] or None, fields["address"] or None)
    except NoticeError as exc:
        flash(str(exc), "error")
        return redirect(url_for("notices.index"))
    flash("notice created" if created else "every confirmed match is already in this notice", "ok")
    return redirect(url_for("notices.show", notice_id=notice["_id"]))


@bp.route("/<notice_id>")
def show(notice_id: str) -> Any:
    """One notice with its URLs' follow-up; ?format=md|txt|html downloads it."""
    store = get_store()
    try:
        notice = store.notices.get(notice_id)
    except (ValueError, TypeError):
        notice = None
    if notice is None:
        abort(404, description="no such notice")
    fmt = request.args.get("format")
    if fmt in FORMATS:
        body = render_notice(notice, fmt)
        kind = {"md": "text/markdown", "txt": "text/plain", "html": "text/html"}[fmt]
        return Response(body, mimetype=kind, headers={
            "Content-Disposition": f'attachment; filename="notice-{notice["site"]}-{notice_id}.{fmt}"'})
    states = {t["_id"]: t for t in store.notices.takedowns(notice["site"])}
    return render_template("notices/show.html", n=notice, states=states, channels=CHANNELS)


@bp.route("/<notice_id>/sent", methods=["POST"])
def mark_sent(notice_id: str) -> Any:
    """Record that the notice was sent (once), how and to whom."""
    channel = (request.form.get("channel") or "").strip()
    recipient = (request.form.get("recipient") or "").strip()[:300]
    if channel not in CHANNELS or not recipient:
        abort(400, description=f"say how the notice was sent ({', '.join(CHANNELS)}) and to whom")
    ok = get_store().notices.mark_sent(notice_id, by=g.get("user") or "", channel=channel, recipient=recipient)
    flash("marked as sent" if ok else "this notice was already sent", "ok" if ok else "error")
    return redirect(url_for("notices.show", notice_id=notice_id))
