"""Matches: the filtered list, the side-by-side detail with review actions, and evidence exports."""
from __future__ import annotations

import csv
import hashlib
import io
import json
from datetime import datetime
from typing import Any, Iterator

from flask import (Blueprint, Response, abort, current_app, flash, g, redirect, render_template,
                   request, stream_with_context, url_for)

from admin.db import get_store
from admin.dashboard import admin_cache, note_review
from admin.queries import ACTIONS, MAX_OFFSET, SORTS, STATUSES, BadFilter, MatchQuery, parse_match_query
from admin.render import highlight_parts, passages, safe_href
from storage.schema import REVIEW_ACTIONS, to_oid

bp = Blueprint("matches", __name__, url_prefix="/matches")

LIST_FIELDS = {"suspect_url": 1, "site": 1, "title": 1, "source_id": 1, "source_title": 1, "score": 1,
               "source_coverage": 1, "suspect_coverage": 1, "status": 1, "created": 1, "updated": 1,
               "reviewer": 1, "methods": 1}


def load_match(match_id: str) -> dict:
    """The match or a 404 (malformed ids too, never a 500)."""
    if not match_id or len(match_id) > 200:
        abort(404)
    try:
        doc = get_store().matches.get(match_id)
    except (ValueError, TypeError, KeyError):
        doc = None
    if not doc:
        abort(404, description="no such match")
    return doc


def texts_for(match: dict) -> tuple[str, str, dict | None, dict | None]:
    """Source and suspect texts for a match (empty when the stored copy is gone)."""
    store = get_store()
    source = _safe_get(store.sources.get, match.get("source_id"))
    view = suspect_view(match)
    return (str((source or {}).get("text") or ""), view["text"], source, view["page"])


def matched_page(match: dict) -> dict | None:
    """The stored page the match was made on: only when it still carries the match's URL (ids can be claimed)."""
    page = _safe_get(get_store().get_page, match.get("suspect_page_id"))
    return page if page and page.get("url") == match.get("suspect_url") else None


def suspect_view(match: dict) -> dict[str, Any]:
    """The suspect text to show and export: the evidence snapshot taken at match time when there is one,
    else the stored page (if it is still the matched URL), else the text kept in the match; and what is
    known of the live page (live_state), which is only ever what a fetch saw."""
    store = get_store()
    evidence = _safe_get(store.evidence.for_match, match) if match.get("evidence_seq") is not None else None
    page = matched_page(match)
    live = live_state(match, evidence, page)
    if evidence is not None:
        return {"text": str(evidence.get("text") or ""), "origin": "evidence", "evidence": evidence,
                "page": page, **live}
    if page is not None:
        return {"text": str(page.get("text") or ""), "origin": "page", "evidence": None, "page": page, **live}
    return {"text": str(match.get("suspect_text") or ""), "origin": "match", "evidence": None, "page": None,
            **live}  # dropped duplicates: their text is kept in the match


def live_state(match: dict, evidence: dict | None, page: dict | None) -> dict[str, Any]:
    """{live_state, live_at, live_reason, live_changed}: the latest re-check of the page, or a later crawl
    that stored a different text; "not rechecked" (live_changed None) when nothing fetched it since."""
    check = match.get("live_check") or {}
    if check.get("state"):
        state = check["state"]
        return {"live_state": state, "live_at": check.get("at"), "live_reason": check.get("reason"),
                "live_changed": None if state == "unreachable" else state != "unchanged"}
    if evidence is not None and page is not None:
        live = hashlib.sha256(str(page.get("text") or "").encode("utf-8")).hexdigest()
        if live != evidence.get("text_sha256"):
            return {"live_state": "changed", "live_at": page.get("fetched"), "live_changed": True,
                    "live_reason": "a later crawl stored a different text for this URL"}
    return {"live_state": None, "live_at": None, "live_reason": None, "live_changed": None}


def _safe_get(fn: Any, key: Any) -> dict | None:
    if key is None:
        return None
    try:
        return fn(key)
    except (ValueError, TypeError, KeyError):
        return None


def _list_query() -> MatchQuery:
    """The list's filters carried by a detail page or a form (a bad one is a 400 naming it)."""
    try:
        return exact_site(parse_match_query(request.args, current_app.config["PER_PAGE"]))
    except BadFilter as exc:
        abort(400, description=str(exc))


def exact_site(mq: MatchQuery) -> MatchQuery:
    """A whole host typed in the site box is looked up by the site index, not by a substring scan."""
    if mq.site_like and get_store().matches.site_exists(mq.site_like):
        mq.site, mq.site_like = mq.site_like, ""
    return mq


COUNT_WAIT_SECONDS = 0.3


def total_of(mq: MatchQuery) -> int | None:
    """How many matches pass the filters: counted in the background and kept COUNT_CACHE_SECONDS
    (30 s), so a big collection never holds the page up; None while the first count still runs."""
    store, cfg = get_store(), current_app.config
    key = "count:" + json.dumps(sorted((k, v) for k, v in mq.args.items() if k != "sort"), ensure_ascii=False)
    counted = MatchQuery(**{**mq.__dict__, "after": None})
    return admin_cache().get(key, cfg.get("COUNT_CACHE_SECONDS", 30), lambda: store.matches.count(counted),
                             wait=cfg.get("COUNT_WAIT_SECONDS", COUNT_WAIT_SECONDS))


@bp.route("/")
def index() -> Any:
    """The filtered, sorted, paged list with its total, one checkbox per match and the bulk form."""
    store = get_store()
    sources = store.sources.all()
    try:
        mq = exact_site(parse_match_query(request.args, current_app.config["PER_PAGE"]))
    except BadFilter as exc:
        return render_template("matches/list.html", error=str(exc), matches=[], next_cursor=None, total=None,
                               mq=None, args=request.args, statuses=STATUSES, sorts=SORTS, sources=sources), 400
    docs, nxt = store.matches.find(mq, LIST_FIELDS)
    return render_template("matches/list.html", matches=docs, next_cursor=nxt, mq=mq, error=None,
                           total=total_of(mq), args=request.args, statuses=STATUSES, sorts=SORTS,
                           sources=sources, next_page=_next_page(mq, nxt), actions=ACTIONS)


def _next_page(mq: MatchQuery, nxt: str | None) -> dict[str, Any] | None:
    """The next page's arguments: a page number while offsets are cheap, the cursor beyond."""
    if not nxt:
        return None
    if not mq.after and mq.page * mq.per_page < MAX_OFFSET:
        return {**mq.args, "page": mq.page + 1}
    return {**mq.args, "after": nxt}


@bp.route("/<match_id>")
def detail(match_id: str) -> Any:
    """Source and suspect side by side with the matched passages marked and linked."""
    m = load_match(match_id)
    mq = _list_query()
    src_text, _, source, _ = texts_for(m)
    view = suspect_view(m)
    sus_text, page = view["text"], view["page"]
    return render_template(
        "matches/detail.html", m=m, match_id=match_id, source=source, page=page, view=view, list_args=mq.args,
        **evidence_extras(m, view),
        src_parts=highlight_parts(src_text, m.get("source_spans")),
        sus_parts=highlight_parts(sus_text, m.get("suspect_spans")),
        passages=passages(m, src_text, sus_text, 300), href=safe_href(m.get("suspect_url")),
        source_href=safe_href((source or {}).get("url")), next_id=next_unreviewed(mq, m),
        history=list(reversed(m.get("history") or [])))


@bp.route("/<match_id>/sentences")
def sentences(match_id: str) -> Any:
    """The source's and the suspect's sentences paired side by side, swapped words marked (a rewrite read)."""
    from admin.sentences import pair_view

    m = load_match(match_id)
    src_text, _, _, _ = texts_for(m)
    view = suspect_view(m)   # the evidence snapshot's text when there is one: read, never written
    return render_template("matches/sentences.html", m=m, match_id=match_id, view=view,
                           pv=pair_view(src_text, view["text"]))


def next_unreviewed(mq: MatchQuery, match: dict) -> str | None:
    """The next match still "new" after this one in the list's order, else the first from the top
    ("confirm and next", and "j" to skip one)."""
    store, field = get_store(), SORTS[mq.sort][0]
    base = {**mq.__dict__, "status": "new", "page": 1, "per_page": 2, "after": None}
    if match.get(field) is not None:
        docs, _ = store.matches.find(MatchQuery(**{**base, "after": (match[field], to_oid(match["_id"]))}), {"_id": 1})
        if docs:
            return str(docs[0]["_id"])
    docs, _ = store.matches.find(MatchQuery(**base), {"_id": 1})
    return next((str(d["_id"]) for d in docs if str(d["_id"]) != str(match["_id"])), None)


def evidence_extras(match: dict, view: dict) -> dict[str, Any]:
    """The detail page's timestamp line and rendered capture (issue 26): what proves the snapshot's time."""
    store = get_store()
    stamp = store.evidence.stamp_covering(view["evidence"]["_id"]) if view.get("evidence") else None
    return {"stamp": stamp, "stamp_status": store.evidence.stamp_status().summary(), "capture": store.evidence.capture_facts(match)}


@bp.route("/<match_id>/capture.<kind>")
def capture_file(match_id: str, kind: str) -> Any:
    """The rendered capture's screenshot (png) or PDF, as chained in the evidence log."""
    rec = get_store().evidence.capture_for(load_match(match_id)) if kind in ("png", "pdf") else None
    if rec is None or rec.get(kind) is None:
        abort(404, description="no rendered capture of this match")
    return Response(bytes(rec[kind]), mimetype="image/png" if kind == "png" else "application/pdf")


def capture_after_confirm(m: dict) -> None:
    """A confirmed match's page is rendered (PNG + PDF) into the evidence log; off or failing, say so."""
    from admin.capture import CaptureFailed, CaptureOff, capture_match

    try:
        seq = capture_match(get_store(), m)
    except (CaptureOff, CaptureFailed) as exc:
        flash(f"No rendered capture: {exc}", "error")
    else:
        flash(f"Page rendered and chained as evidence record #{seq}.", "ok")


@bp.route("/<match_id>/capture", methods=["POST"])
def capture_now(match_id: str) -> Any:
    """Render the page again now (a reappeared copy, or a capture that failed at confirmation)."""
    capture_after_confirm(load_match(match_id))
    return redirect(url_for("matches.detail", match_id=match_id))


@bp.route("/<match_id>/evidence.zip")
def evidence_pack(match_id: str) -> Any:
    """The match's evidence pack: raw bytes, text, passages, digests, chain proof and how to check them."""
    from admin.evidence_pack import write_pack

    m = load_match(match_id)
    if m.get("evidence_seq") is None:
        abort(404, description="this match has no evidence snapshot (it was made before evidence was kept)")
    buf = io.BytesIO()
    write_pack(get_store(), str(m["_id"]), buf)
    resp = Response(buf.getvalue(), mimetype="application/zip")
    resp.headers["Content-Disposition"] = f'attachment; filename="evidence-{m["_id"]}.zip"'
    return resp


def _action() -> str:
    action = request.form.get("action", "")
    if action not in ACTIONS:
        abort(400, description=f"action must be one of {', '.join(ACTIONS)}")
    return action


def record_review(match: dict, action: str, note: str) -> None:
    """One review decision in the match's history, and the dashboard's counts moved with it at once."""
    get_store().matches.review(str(match["_id"]), action, g.user, note)
    note_review(match.get("status"), REVIEW_ACTIONS[action])


@bp.route("/<match_id>/review", methods=["POST"])
def review(match_id: str) -> Any:
    """Record confirm / dismiss / license with a note; ?go=next continues with the next unreviewed match."""
    m = load_match(match_id)
    mq = _list_query()
    action = _action()
    note = request.form.get("note", "").strip()[:2000]
    store = get_store()
    record_review(m, action, note)
    if action == "confirm":
        capture_after_confirm(m)
    msg = f"Match marked {ACTIONS[action]}."
    if action == "license" and request.form.get("whole_site") and m.get("site") and m.get("source_id"):
        store.matches.license_site(m["site"], m["source_id"], g.user, note)
        others = [i for i in store.matches.open_of_site(m["site"], m["source_id"]) if i != match_id]
        for other in others:
            record_review(store.matches.get(other) or {"_id": other}, "license",
                          note or f"site licensed with match {match_id}")
        msg += f" Site {m['site']} licensed for this source; {len(others)} other matches updated."
    flash(msg, "ok")
    if request.args.get("go") != "next":
        return redirect(url_for("matches.detail", match_id=match_id, **mq.args))
    nxt = next_unreviewed(mq, store.matches.get(match_id) or m)
    if nxt is None:
        flash("No unreviewed match left in this list.", "ok")
        return redirect(url_for("matches.index", **mq.args))
    return redirect(url_for("matches.detail", match_id=nxt, **mq.args))


MAX_BULK = 500


@bp.route("/bulk", methods=["POST"])
def bulk() -> Any:
    """Confirm, dismiss or license every ticked match of the list at once (each in its own history)."""
    mq = _list_query()
    action = _action()
    ids = [i for i in request.form.getlist("ids") if i][:MAX_BULK + 1]
    if not ids:
        flash("Tick at least one match first.", "error")
        return redirect(url_for("matches.index", **mq.args)), 303
    if len(ids) > MAX_BULK:
        abort(400, description=f"at most {MAX_BULK} matches at once")
    note = request.form.get("note", "").strip()[:2000]
    matches = [load_match(mid) for mid in dict.fromkeys(ids)]  # an unknown id is a 404 before any change
    for m in matches:
        record_review(m, action, note)
    flash(f"{len(matches)} match(es) marked {ACTIONS[action]}.", "ok")
    return redirect(url_for("matches.index", **mq.args)), 303


@bp.route("/<match_id>/recheck", methods=["POST"])
def recheck(match_id: str) -> Any:
    """Fetch the suspect page now (the crawler's politeness rules) and record unchanged / changed / gone."""
    from admin.recheck import NotAllowed, recheck as fetch_and_compare, reference_of

    m = load_match(match_id)
    url = safe_href(m.get("suspect_url"))
    if url is None:
        abort(400, description="this match's URL is not an http(s) URL; it cannot be fetched")
    view = suspect_view(m)
    try:
        check = fetch_and_compare(url, reference_of(m, view["evidence"]))
    except NotAllowed as exc:
        flash(f"Not re-checked: {exc}.", "error")
    else:
        get_store().matches.record_live_check(match_id, check)
        flash(f"Re-checked: {check['state']} ({check['reason']}).", "ok")
    return redirect(url_for("matches.detail", match_id=match_id, **_list_query().args)), 303


def _export_rows(mq: Any) -> Iterator[dict]:
    """Evidence rows: URLs, times, scores and the matched passages' offsets and text."""
    store = get_store()
    sources: dict[Any, str] = {}
    for batch in store.matches.batches(mq):
        for m in batch:
            sid = m.get("source_id")
            if sid not in sources:
                sources[sid] = str((_safe_get(store.sources.get, sid) or {}).get("text") or "")
            view = suspect_view(m)
            ev = view["evidence"] or {}
            yield {
                "id": str(m["_id"]), "status": m.get("status"), "suspect_url": m.get("suspect_url"),
                "site": m.get("site"), "title": m.get("title"), "fetched": _iso(m.get("fetched")),
                "created": _iso(m.get("created")), "updated": _iso(m.get("updated")),
                "source_id": sid, "source_title": m.get("source_title"), "score": m.get("score"),
                "source_coverage": m.get("source_coverage"), "suspect_coverage": m.get("suspect_coverage"),
                "methods": list(m.get("methods") or []), "reviewer": m.get("reviewer"), "note": m.get("note"),
                "passages": passages(m, sources[sid], view["text"]),
                "evidence_seq": ev.get("_id"), "evidence_digest": ev.get("digest"),
                "text_sha256": ev.get("text_sha256"), "raw_sha256": ev.get("raw_sha256"),
                "live_page_changed": view["live_changed"],
                "live_check": view["live_state"] or "not re-checked", "live_checked_at": _iso(view["live_at"]),
            }


def _iso(v: Any) -> Any:
    return v.isoformat() if isinstance(v, datetime) else v


CSV_COLUMNS = ["id", "status", "suspect_url", "site", "title", "fetched", "created", "updated",
               "source_id", "source_title", "score", "source_coverage", "suspect_coverage", "methods",
               "reviewer", "note", "passages", "evidence_seq", "evidence_digest", "text_sha256", "raw_sha256",
               "live_page_changed", "live_check", "live_checked_at"]


def _csv_cell(v: Any) -> Any:
    """Neutralise spreadsheet formulas in crawled text (CSV injection)."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


@bp.route("/export.<fmt>")
def export(fmt: str) -> Any:
    """The filtered list as CSV or JSON evidence (streamed, capped at EXPORT_MAX rows)."""
    if fmt not in ("csv", "json"):
        abort(404)
    try:
        mq = exact_site(parse_match_query(request.args, 500))
    except BadFilter as exc:
        abort(400, description=str(exc))
    stamp = datetime.utcnow().strftime("%Y%m%d-%H%M%S")
    if fmt == "json":
        def gen_json() -> Iterator[str]:
            yield "["
            for i, row in enumerate(_export_rows(mq)):
                yield ("," if i else "") + "\n" + json.dumps(row, ensure_ascii=False)
            yield "\n]\n"
        body, mime = gen_json(), "application/json"
    else:
        def gen_csv() -> Iterator[str]:
            buf = io.StringIO()
            buf.write("\ufeff")  # UTF-8 BOM: Excel otherwise reads the Chinese text as mojibake
            w = csv.writer(buf)
            w.writerow(CSV_COLUMNS)
            for row in _export_rows(mq):
                row["methods"] = " ".join(row["methods"])
                row["passages"] = json.dumps(
                    [{"source": p["source_span"], "suspect": p["suspect_span"], "text": p["suspect_text"]}
                     for p in row["passages"]], ensure_ascii=False)
                w.writerow([_csv_cell(row[c]) for c in CSV_COLUMNS])
                yield buf.getvalue()
                buf.seek(0)
                buf.truncate()
            yield buf.getvalue()
        body, mime = gen_csv(), "text/csv"  # Flask adds "; charset=utf-8" to text/* itself
    resp = Response(stream_with_context(body), mimetype=mime)
    resp.headers["Content-Disposition"] = f'attachment; filename="matches-{stamp}.{fmt}"'
    return resp
