"""Flask admin for reviewers: infringement matches, duplicate clusters, the source library.

    python -m admin users add NAME            # asks for a password (--password-stdin for scripts)
    python -m admin serve [--host 127.0.0.1 --port 5000]     # or: flask --app admin run
    python -m admin sources add PATH...       # .txt, .jsonl or directories of them; list; remove ID
    python -m admin matches [--json]

The store comes from the environment (MONGO_URI / REDIS_URL, else the embedded servers under
ZHDEDUP_VAR). The session key is ZHDEDUP_SECRET_KEY or a generated key kept in var/ (mode 0600).
Every page needs a login; logins are rate limited (see admin/auth.py).
"""
from __future__ import annotations

import os
from datetime import datetime
from typing import Any, Mapping

from flask import Flask, Response, g
from flask.json.provider import DefaultJSONProvider
from flask_wtf.csrf import CSRFProtect

from admin.db import get_store  # noqa: F401 - admin.get_store: the name callers used before admin/db.py
from admin.errors import error_page  # noqa: F401 - admin.error_page, likewise
from admin.settings import load_secret_key

csrf = CSRFProtect()

#: No inline scripts or styles; everything comes from /static on this origin (works offline).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


class SafeJSONProvider(DefaultJSONProvider):
    """JSON with <, > and & as \\u escapes, so crawled HTML in an API answer is inert even if sniffed."""

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        out = super().dumps(obj, **kwargs)
        return out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Application factory (Flask tutorial style) so tests and the CLI each get their own app."""
    app = Flask(__name__)
    app.json = SafeJSONProvider(app)
    app.config.update(
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # behind HTTPS set ZHDEDUP_SECURE_COOKIES=1: the session cookie is then never sent in clear
        SESSION_COOKIE_SECURE=os.environ.get("ZHDEDUP_SECURE_COOKIES", "").lower() in ("1", "true", "yes", "on"),
        MAX_CONTENT_LENGTH=64 * 1024 * 1024,
        WTF_CSRF_TIME_LIMIT=None,
        PER_PAGE=50,
        STORE=None,
        LOGIN_MAX_FAILURES=5,
        LOGIN_WINDOW_SECONDS=900,
        STORE_CHECK_SECONDS=2.0,   # how often an opened store checks where the embedded servers listen
    )
    if config:
        app.config.update(config)
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = load_secret_key()
    csrf.init_app(app)

    from admin import api, auth, dashboard, db, duplicates, errors, matches, notices, runs, sources, watch

    for bp in (auth.bp, dashboard.bp, matches.bp, duplicates.bp, sources.bp, runs.bp, api.bp, watch.bp, notices.bp):
        app.register_blueprint(bp)
    app.add_url_rule("/", endpoint="index", view_func=dashboard.index)
    app.add_template_filter(_fmt_dt, "dt")
    app.add_template_filter(_fmt_pct, "pct")
    from admin.render import strip_bidi

    app.jinja_env.finalize = strip_bidi
    auth.init_app(app)
    app.after_request(_security_headers)
    db.init_app(app)
    errors.init_app(app)
    return app


def _security_headers(resp: Response) -> Response:
    """Crawled text is hostile: forbid inline script, framing and MIME sniffing on every response."""
    resp.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    resp.headers.setdefault("X-Frame-Options", "DENY")
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("Referrer-Policy", "same-origin")
    if g.get("user"):
        resp.headers["Cache-Control"] = "no-store"  # reviewers' pages never stay in a shared or back-button cache
    return resp


def _fmt_dt(v: Any) -> str:
    """Times as 'YYYY-MM-DD HH:MM' (UTC); anything else as text."""
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%d %H:%M")
    return "" if v is None else str(v)


def _fmt_pct(v: Any) -> str:
    """Scores and coverages (0..1) as percentages."""
    if isinstance(v, (int, float)):
        return f"{100 * v:.1f}%"
    return "–"
