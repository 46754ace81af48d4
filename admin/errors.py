"""The admin's error pages: a styled page for every HTTP error, and a 503 that names the server that is down
and how to start it (the store is dropped, so the next request opens it again)."""
from __future__ import annotations

import logging
from typing import Any

from flask import Flask, render_template, request
from werkzeug.exceptions import HTTPException

from admin.db import drop_store, store_config
from storage.connection import SERVER_ERRORS, server_of
from storage.errors import StorageUnavailable, mask_credentials

log = logging.getLogger("admin")

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
    drop_store()
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
        config = store_config()
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


def init_app(app: Flask) -> None:
    """A server down answers 503 with how to start it, also for a call outside the store's retry."""
    app.register_error_handler(StorageUnavailable, _unavailable)
    for error in SERVER_ERRORS:
        app.register_error_handler(error, _unavailable)
