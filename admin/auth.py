"""Login, logout, user accounts, server-side sessions and the login rate limit.

Sessions live in the store (storage/users.py): the signed cookie carries only a random token, and
logout, a password change or `users remove` delete the session, so a captured cookie dies with it.

Rate limit: in-memory failure counts per (client IP, user name) and per user name over all IPs,
inside a sliding window of LOGIN_WINDOW_SECONDS (default 900 s). The first LOGIN_MAX_FAILURES
(default 5) failures of a pair are free; each later one doubles the wait before the next try (2 s,
4 s, ... up to the window). A name has four times that many free failures over all addresses, then
waits that double up to one minute, so a spray from many IPs is slowed without ever locking the
account. Nothing is counted per IP alone: made-up names from one address never lock anyone else
out.

Device cookies (OWASP's "Slow Down Online Guessing Attacks with Device Cookies"): a successful login
leaves a signed cookie naming the user and a random nonce in that browser (a year, HttpOnly). A login
try that brings a valid device cookie for the name it tries is counted and limited on that device
alone, never on the name's or the address's counters: a spray against a reviewer from other addresses
slows the strangers, while the reviewer's own browser keeps its own allowance (LOGIN_MAX_FAILURES
free, then doubling waits). Every successful login replaces the device cookie with a fresh one. Unknown names cost the same password-hash work as known ones (no timing oracle). The counter
lives in the process (one admin process is the supported deployment); a restart forgets it.

The login form's CSRF token is bound to the session cookie it came with, so only page navigations
are sent to the form: a browser's own requests without a session (its /favicon.ico, an image) get a
bare 401. Answered with the form, each would mint a new CSRF secret in a new cookie and replace the
one an open login form was issued with. A login form that is stale anyway (a second tab, an expired
cookie) is shown again with a fresh token and a message, never a bare 400 page.
"""
from __future__ import annotations

import secrets
import threading
import time
from collections import defaultdict, deque
from functools import lru_cache
from typing import Any, Callable
from urllib.parse import urlsplit

from flask import (Blueprint, Flask, current_app, flash, g, jsonify, redirect, render_template,
                   request, session, url_for)
from flask_wtf.csrf import CSRFError
from itsdangerous import BadData, URLSafeTimedSerializer
from werkzeug.security import check_password_hash, generate_password_hash

bp = Blueprint("auth", __name__)

PUBLIC_ENDPOINTS = {"auth.login", "static"}
USER_CAP_SECONDS = 60.0


class LoginLimiter:
    """Failed logins per (IP, user) and per user in a sliding window; says how long a try must wait."""

    def __init__(self, max_failures: int = 5, window: float = 900.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_failures = max_failures
        self.window = window
        self.clock = clock   # a test holds it still: waits of 2 s must not depend on a machine's speed
        self._fails: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def _prune(self, key: str, now: float) -> deque[float]:
        q = self._fails[key]
        while q and q[0] <= now - self.window:
            q.popleft()
        if not q:
            del self._fails[key]
        return q

    def _wait(self, key: str, free: int, cap: float, now: float) -> float:
        q = self._prune(key, now)
        over = len(q) - free
        if over < 0:
            return 0.0
        delay = min(2.0 ** (over + 1), cap)
        return max(0.0, q[-1] + delay - now)

    def locked_for(self, ip: str, user: str, now: float | None = None, device: str | None = None) -> float:
        """Seconds until this IP+user (or this trusted device of the user) may try again (0: now)."""
        now = self.clock() if now is None else now
        with self._lock:
            if device:
                return self._wait(f"device|{device}", self.max_failures, self.window, now)
            return max(self._wait(f"{ip}|{user}", self.max_failures, self.window, now),
                       self._wait(f"user|{user}", self.max_failures * 4, USER_CAP_SECONDS, now))

    def failed(self, ip: str, user: str, now: float | None = None, device: str | None = None) -> None:
        """Count one failed attempt for the trusted device, else for the pair and for the user name."""
        now = self.clock() if now is None else now
        with self._lock:
            if device:
                self._fails[f"device|{device}"].append(now)
                return
            self._fails[f"{ip}|{user}"].append(now)
            self._fails[f"user|{user}"].append(now)

    def succeeded(self, ip: str, user: str, device: str | None = None) -> None:
        """A right password clears that pair's (and that device's) failures."""
        with self._lock:
            self._fails.pop(f"{ip}|{user}", None)
            if device:
                self._fails.pop(f"device|{device}", None)


DEVICE_COOKIE = "zhdedup_device"
DEVICE_MAX_AGE = 365 * 24 * 3600


def _device_signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt="zhdedup-device-cookie")


def device_of(name: str) -> str | None:
    """The nonce of this browser's device cookie when it is valid and was issued to `name`, else None."""
    raw = request.cookies.get(DEVICE_COOKIE)
    if not raw or len(raw) > 500:
        return None
    try:
        data = _device_signer().loads(raw, max_age=DEVICE_MAX_AGE)
    except BadData:
        return None
    if not isinstance(data, dict) or data.get("u") != name or not isinstance(data.get("n"), str):
        return None
    return data["n"]


def set_device_cookie(resp: Any, name: str) -> Any:
    """Leave a fresh device cookie for `name` in the browser that just logged in."""
    token = _device_signer().dumps({"u": name, "n": secrets.token_urlsafe(18)})
    resp.set_cookie(DEVICE_COOKIE, token, max_age=DEVICE_MAX_AGE, httponly=True, samesite="Lax",
                    secure=current_app.config.get("SESSION_COOKIE_SECURE", False), path="/")
    return resp


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    """A hash of a random password, checked for unknown names so they cost what known ones cost."""
    return generate_password_hash(secrets.token_hex(16))


def add_user(store: Any, name: str, password: str) -> None:
    """Create or reset an account; only the werkzeug hash of the password is stored."""
    name = name.strip()
    if not name or len(name) > 64 or any(c.isspace() for c in name):
        raise ValueError("user name must be 1-64 characters without spaces")
    if len(password) < 8:
        raise ValueError("password must be at least 8 characters")
    store.users.save(name, generate_password_hash(password))


def check_user(store: Any, name: str, password: str) -> bool:
    """True when the account exists and the password matches its hash."""
    doc = store.users.get(name)
    if not doc:
        check_password_hash(_dummy_hash(), password)  # one hash check either way: no timing oracle
        return False
    return check_password_hash(doc["password_hash"], password)


def safe_next(target: str | None) -> str | None:
    """Only a relative path on this site may follow a login (no open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or any(ord(c) < 32 for c in target):
        return None
    return target


def init_app(app: Flask) -> None:
    """Attach the rate limiter and the login-required hook to the app (and warm the dummy hash)."""
    app.extensions["login_limiter"] = LoginLimiter(
        app.config["LOGIN_MAX_FAILURES"], app.config["LOGIN_WINDOW_SECONDS"])
    app.before_request(_require_login)
    app.register_error_handler(CSRFError, _csrf_failed)
    _dummy_hash()


def _csrf_failed(exc: CSRFError) -> Any:
    """A login form whose token no longer fits the cookie: show the form again (with a token that fits
    now) and say why; nothing was checked or counted. Every other form gets the styled 400 page."""
    if request.endpoint != "auth.login":
        from admin.errors import error_page

        return error_page(exc)
    flash("The login form had expired (a new session was started, e.g. in another tab); please log in again.",
          "error")
    return render_template("auth/login.html", next=safe_next(request.values.get("next"))), 400


def _is_navigation() -> bool:
    """Whether a browser asked for a page to show (Sec-Fetch-Dest: document); True without the header."""
    return request.headers.get("Sec-Fetch-Dest", "document") == "document"


def _require_login() -> Any:
    """Every page but the login form needs a user; the API answers 401 instead of redirecting."""
    from admin.db import get_store

    g.user = None
    if request.endpoint == "static":
        return None  # no session lookup for CSS and JS
    token = session.get("sid")
    if token:
        g.user = get_store().users.session_user(token)
        if g.user is None:
            session.clear()  # logged out, password changed or account removed: this cookie is dead
    if request.endpoint in PUBLIC_ENDPOINTS or g.user:
        return None
    if request.path.startswith("/api/"):
        return jsonify(error="login required"), 401
    if not _is_navigation():  # an icon, image, script...: no login form, so no new session cookie
        return "login required", 401, {"Content-Type": "text/plain; charset=utf-8"}
    nxt = request.full_path.rstrip("?") if request.method == "GET" else None
    return redirect(url_for("auth.login", next=nxt))


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    """Show the form; on POST check the password under the rate limit and start a session."""
    from admin.db import get_store

    nxt = safe_next(request.values.get("next"))
    if request.method == "POST":
        name = request.form.get("username", "").strip()[:64]
        password = request.form.get("password", "")
        ip = request.remote_addr or "?"
        limiter: LoginLimiter = current_app.extensions["login_limiter"]
        device = device_of(name)
        wait = limiter.locked_for(ip, name, device=device)
        if wait > 0:
            flash(f"Too many failed logins; try again in {int(wait) + 1} seconds.", "error")
            return render_template("auth/login.html", next=nxt), 429
        if check_user(get_store(), name, password):
            limiter.succeeded(ip, name, device)
            session.clear()
            session["sid"] = get_store().users.create_session(name)
            return set_device_cookie(redirect(nxt or url_for("dashboard.index")), name)
        limiter.failed(ip, name, device=device)
        flash("Wrong user name or password.", "error")
        return render_template("auth/login.html", next=nxt), 401
    return render_template("auth/login.html", next=nxt)


@bp.route("/logout", methods=["POST"])
def logout() -> Any:
    """End the session on the server too (POST, so a crawled page cannot log a reviewer out with a link)."""
    from admin.db import get_store

    get_store().users.end_session(session.get("sid"))
    session.clear()
    return redirect(url_for("auth.login"))
