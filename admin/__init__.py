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

import logging
import os
import time
from datetime import datetime
from typing import Any, Mapping

from flask import Flask, Response, current_app, g, render_template, request
from flask.json.provider import DefaultJSONProvider
from flask_wtf.csrf import CSRFProtect
from werkzeug.exceptions import HTTPException

from admin.settings import load_secret_key
from storage.connection import SERVER_ERRORS, server_of
from storage.errors import StorageUnavailable, mask_credentials

log = logging.getLogger(__name__)

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

    from admin import api, auth, dashboard, duplicates, matches, notices, runs, sources, watch

    for bp in (auth.bp, dashboard.bp, matches.bp, duplicates.bp, sources.bp, runs.bp, api.bp, watch.bp, notices.bp):
        app.register_blueprint(bp)
    app.add_url_rule("/", endpoint="index", view_func=dashboard.index)
    app.add_template_filter(_fmt_dt, "dt")
    app.add_template_filter(_fmt_pct, "pct")
    from admin.render import strip_bidi

    app.jinja_env.finalize = strip_bidi
    auth.init_app(app)
    app.after_request(_security_headers)
    app.teardown_appcontext(lambda exc: g.pop("store_checked", None))
    app.register_error_handler(StorageUnavailable, _unavailable)
    for error in SERVER_ERRORS:   # a call outside the store's retry
        app.register_error_handler(error, _unavailable)
    return app


ERROR_HINTS = {
    400: "The address or the form held something the admin cannot use; the message says what.",
    401: "Log in first.",
    403: "This action is not allowed.",
    404: "Nothing is stored under this address (a removed match or work, or a mistyped link).",
    405: "This address does not take that kind of request (a form sent to a page, or a link to an action).",
    429: "Too many requests; wait a moment.",
    500: "Something failed on the server; the server log has the details. Nothing was changed by this page.",
}


def error_page(exc: HTTPException) -> tuple[Any, int]:
    """A styled error page with the navigation (never Werkzeug's bare one), the HTTP code kept."""
    code = exc.code or 500
    message = exc.description if code < 500 else "internal error"
    resp = render_template("errors/http.html", code=code, name=exc.name, message=message,
                           hint=ERROR_HINTS.get(code, "")), code
    if code == 405 and hasattr(exc, "valid_methods") and exc.valid_methods:
        return resp[0], code, {"Allow": ", ".join(exc.valid_methods)}
    return resp


def _unavailable(exc: Exception) -> tuple[Any, int]:
    """A server is down: say which and how to start it (503), and reconnect on the next request."""
    _drop_store()
    if isinstance(exc, StorageUnavailable):
        server, detail, hint = exc.server, exc.detail, exc.hint
    else:
        server = server_of(exc)
        detail, hint = f"{type(exc).__name__}: {exc}", None
    hint = _start_hint(server) or hint
    detail = mask_credentials(detail)  # never put credentials on a page
    log.warning("admin: %s unavailable (%s)", server, detail)
    if request.path.startswith("/api/"):
        return {"error": f"{server} is unavailable", "detail": detail, "hint": hint}, 503
    return render_template("errors/unavailable.html", server=server, detail=detail, hint=hint), 503


def _start_hint(server: str) -> str | None:
    """How to start the server that is down: the embedded one with `python -m storage start`."""
    try:
        config = _config()
    except Exception:  # noqa: BLE001 - a hint must never turn the 503 page into a 500
        return None
    name = "mongo" if "MongoDB" in server else "redis" if "Redis" in server else None
    if name is None:
        return None
    uri = config.mongo_uri if name == "mongo" else config.redis_url
    if not uri:
        return "start it with `python -m storage start` (a crawl starts it too), then reload this page"
    shown = mask_credentials(uri)  # never put credentials on a page
    return f"start the server at {shown} ({'MONGO_URI' if name == 'mongo' else 'REDIS_URL'}), then reload this page"


def _drop_store() -> None:
    """Forget a store the app opened itself (the next request opens it again, where the servers now are)."""
    store = current_app.extensions.pop("zhdedup_store", None)
    if store is not None and current_app.config.get("STORE") is None:
        try:
            store.close()
        except Exception:  # noqa: BLE001 - a dead connection may fail to close; it is dropped anyway
            pass


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


def get_store() -> Any:
    """The app's store object, opened once from the environment (or STORE_CONFIG) unless the config passed one.

    An opened store is re-opened when the embedded servers now listen elsewhere (restarted on new
    ports); while one is down, StorageUnavailable names it (the 503 page) and nothing is started.
    """
    ext = current_app.extensions
    store = ext.get("zhdedup_store")
    if store is not None and current_app.config.get("STORE") is None and not g.get("store_checked") \
            and time.monotonic() >= ext.get("zhdedup_store_next_check", 0.0):
        # at most every STORE_CHECK_SECONDS: asking the servers costs a connection each
        ext["zhdedup_store_next_check"] = time.monotonic() + current_app.config["STORE_CHECK_SECONDS"]
        if _moved(store):
            _drop_store()
            store = None
    if store is None:
        store = current_app.config.get("STORE")
        if store is None:
            store = _open_store()
        store.ensure_indexes()  # a store passed in may sit on a freshly dropped database
        ext["zhdedup_store"] = store
    g.store_checked = True
    return store


def _config() -> Any:
    from storage import StoreConfig

    config = current_app.config.get("STORE_CONFIG") or StoreConfig.from_env()
    # the admin never starts or restarts servers itself, and answers 503 quickly while one is down
    return config.with_(auto_restart=False, retry_seconds=min(config.retry_seconds, 2.0))


def _embedded_down(config: Any) -> None:
    """Raise StorageUnavailable for an embedded server that is not running (read only: starts nothing)."""
    from storage import servers as srv

    for name, label, configured in (("mongo", "MongoDB", config.mongo_uri), ("redis", "Redis", config.redis_url)):
        if not configured and not srv.info(config.var_path, name).running:
            raise StorageUnavailable(f"the embedded {label}", f"not running under {config.var_path}",
                                     "start it with `python -m storage start` (a crawl starts it too), "
                                     "then reload this page")


def _open_store() -> Any:
    from storage import open_store

    config = _config()
    _embedded_down(config)
    return open_store(config)


def _moved(store: Any) -> bool:
    """True when an embedded server of this store is down or now listens on another port."""
    from storage import servers as srv

    config = store.config
    for name, uri in (("mongo", store.mongo_uri), ("redis", store.redis_url)):
        if store.embedded.get(name):
            cur = srv.info(config.var_path, name)
            if not cur.running or cur.uri != uri:
                return True
    return False
