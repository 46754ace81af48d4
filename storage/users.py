"""Users (`store.users`): the admin's reviewer accounts (collection `users`: name, password hash, times) and
their server-side sessions (collection `sessions`: SHA-256 of the cookie's token, user, expiry).

Hashing and checking passwords is the admin's business (admin/auth.py); this only stores them. A session lives
only as long as its document: logout, a password change and removing the account delete it, so a captured
cookie stops working at once."""
from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from .connection import Connection
from .documents import insert_once
from .schema import now, utc


def _token_key(token: str) -> str:
    """Sessions are stored by the token's digest: a leaked database holds no usable cookie."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Users:
    """Save, read, list and remove reviewer accounts by name."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn   # the store's connection: retry, outages, spool

    def save(self, name: str, password_hash: str) -> None:
        """Create an account or replace its password hash; a new password ends the account's sessions."""
        at = now()
        self.conn._retry("mongo", self.conn.db.users.update_one, {"_id": name},
                         {"$set": {"password_hash": password_hash, "updated": at}, "$setOnInsert": {"created": at}},
                         upsert=True)
        self.end_sessions(name)

    def remove(self, name: str) -> bool:
        """Delete an account and every session of it; False when there was no such account."""
        res = self.conn._retry("mongo", self.conn.db.users.delete_one, {"_id": name})
        self.end_sessions(name)
        return res.deleted_count > 0

    def create_session(self, name: str, lifetime: timedelta = timedelta(days=7)) -> str:
        """A new session for the user; returns the token the cookie carries."""
        token = secrets.token_urlsafe(32)
        at = now()
        self.conn._retry("mongo", insert_once, self.conn.db.sessions,
                         [{"_id": _token_key(token), "user": name, "created": at, "expires": at + lifetime}])
        return token

    def session_user(self, token: str | None) -> str | None:
        """The user of a live session (None when unknown, ended, expired, or the account is gone)."""
        if not isinstance(token, str) or not 20 <= len(token) <= 100:
            return None
        doc = self.conn._retry("mongo", self.conn.db.sessions.find_one, {"_id": _token_key(token)})
        if not doc or utc(doc["expires"]) <= now():
            return None
        return doc["user"] if self.exists(doc["user"]) else None

    def end_session(self, token: str | None) -> None:
        """Logout: this session stops working."""
        if isinstance(token, str):
            self.conn._retry("mongo", self.conn.db.sessions.delete_one, {"_id": _token_key(token)})

    def end_sessions(self, name: str) -> int:
        """Every session of the account stops working (password change, removal); returns how many."""
        return self.conn._retry("mongo", self.conn.db.sessions.delete_many, {"user": name}).deleted_count

    def get(self, name: str) -> dict | None:
        """One account with its password hash, or None."""
        return self.conn._retry("mongo", self.conn.db.users.find_one, {"_id": name}) if name else None

    def exists(self, name: str) -> bool:
        """Whether the account still exists (a removed account's sessions end)."""
        found = self.conn._retry("mongo", self.conn.db.users.find_one, {"_id": name}, {"_id": 1}) if name else None
        return found is not None

    def names(self) -> list[str]:
        """Every account name, sorted."""
        users = self.conn._retry("mongo", list, self.conn.db.users.find({}, {"_id": 1}).sort("_id", 1))
        return [u["_id"] for u in users]
