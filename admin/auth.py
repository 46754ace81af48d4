"""Login, logout, user accounts and the login rate limit.

Rate limit: an in-memory counter per (client IP, user name). After LOGIN_MAX_FAILURES (default 5)
failed attempts within LOGIN_WINDOW_SECONDS (default 900 s) that pair is locked out until the oldest
counted failure leaves the window; a successful login clears it. Each IP also has a ceiling of four
times that many failures over all user names, so one client cannot spray many accounts. The counter
lives in the process (one admin process is the supported deployment); a restart forgets it.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import Any
from urllib.parse import urlsplit

from flask import (Blueprint, Flask, current_app, flash, g, jsonify, redirect, render_template,
                   request, session, url_for)
from werkzeug.security import check_password_hash, generate_password_hash

bp = Blueprint("auth", __name__)

PUBLIC_ENDPOINTS = {"auth.login", "static"}


class LoginLimiter:
    """Counts failed logins per key inside a sliding window and says when a key is locked."""

    def __init__(self, max_failures: int = 5, window: float = 900.0) -> None:
        self.max_failures = max_failures
        self.window = window
        self._fails: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def _prune(self, key: str, now: float) -> deque[float]:
        q = self._fails[key]
        while q and q[0] <= now - self.window:
            q.popleft()
        return q

    def locked_for(self, ip: str, user: str, now: float | None = None) -> float:
        """Seconds until this IP+user may try again (0 when not locked)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            wait = 0.0
            for key, limit in ((f"{ip}|{user}", self.max_failures), (ip, self.max_failures * 4)):
                q = self._prune(key, now)
                if len(q) >= limit:
                    wait = max(wait, q[0] + self.window - now)
            return wait

    def failed(self, ip: str, user: str, now: float | None = None) -> None:
        """Count one failed attempt for the pair and for the IP."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._fails[f"{ip}|{user}"].append(now)
            self._fails[ip].append(now)

    def succeeded(self, ip: str, user: str) -> None:
        """A right password clears that pair's failures."""
        with self._lock:
            self._fails.pop(f"{ip}|{user}", None)


def add_user(store: Any, name: str, password: str) -> None:
    """Create or reset an account; only the werkzeug hash of the password is stored."""
    name = name.strip()
    if not name or len(name) > 64 or any(c.isspace() for c in name):
        raise ValueError("user name must be 1-64 characters without spaces")
    if len(password) < 8:
        raise ValueError("password must be at least 8 characters")
    store.save_user(name, generate_password_hash(password))


def check_user(store: Any, name: str, password: str) -> bool:
    """True when the account exists and the password matches its hash."""
    doc = store.get_user(name)
    if not doc:
        check_password_hash(generate_password_hash("x"), password)  # same work either way
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
    """Attach the rate limiter and the login-required hook to the app."""
    app.extensions["login_limiter"] = LoginLimiter(
        app.config["LOGIN_MAX_FAILURES"], app.config["LOGIN_WINDOW_SECONDS"])
    app.before_request(_require_login)


def _require_login() -> Any:
    """Every page but the login form needs a user; the API answers 401 instead of redirecting."""
    g.user = session.get("user")
    if request.endpoint in PUBLIC_ENDPOINTS:
        return None
    if g.user:
        from admin import get_store

        if get_store().user_exists(g.user):
            return None
        session.clear()  # the account was removed: its sessions end too
        g.user = None
    if request.path.startswith("/api/"):
        return jsonify(error="login required"), 401
    nxt = request.full_path.rstrip("?") if request.method == "GET" else None
    return redirect(url_for("auth.login", next=nxt))


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    """Show the form; on POST check the password under the rate limit and start a session."""
    from admin import get_store

    nxt = safe_next(request.values.get("next"))
    if request.method == "POST":
        name = request.form.get("username", "").strip()[:64]
        password = request.form.get("password", "")
        ip = request.remote_addr or "?"
        limiter: LoginLimiter = current_app.extensions["login_limiter"]
        wait = limiter.locked_for(ip, name)
        if wait > 0:
            flash(f"Too many failed logins; try again in {int(wait) + 1} seconds.", "error")
            return render_template("login.html", next=nxt), 429
        if check_user(get_store(), name, password):
            limiter.succeeded(ip, name)
            session.clear()
            session["user"] = name
            return redirect(nxt or url_for("dashboard.index"))
        limiter.failed(ip, name)
        flash("Wrong user name or password.", "error")
        return render_template("login.html", next=nxt), 401
    return render_template("login.html", next=nxt)


@bp.route("/logout", methods=["POST"])
def logout() -> Any:
    """End the session (POST, so a crawled page cannot log a reviewer out with a link)."""
    session.clear()
    return redirect(url_for("auth.login"))
