"""UserStore: the admin's reviewer accounts (collection `users`: name, password hash, times).

Hashing and checking passwords is the admin's business (admin/auth.py); this only stores them."""
from __future__ import annotations

from .connection import Connection
from .schema import now


class UserStore(Connection):
    """Save, read, list and remove reviewer accounts by name."""

    def save_user(self, name: str, password_hash: str) -> None:
        """Create an account or replace its password hash."""
        at = now()
        self._retry("mongo", self.db.users.update_one, {"_id": name},
                    {"$set": {"password_hash": password_hash, "updated": at}, "$setOnInsert": {"created": at}},
                    upsert=True)

    def get_user(self, name: str) -> dict | None:
        """One account with its password hash, or None."""
        return self._retry("mongo", self.db.users.find_one, {"_id": name}) if name else None

    def user_exists(self, name: str) -> bool:
        """Whether the account still exists (a removed account's sessions end)."""
        return bool(name) and self._retry("mongo", self.db.users.find_one, {"_id": name}, {"_id": 1}) is not None

    def list_users(self) -> list[str]:
        """Every account name, sorted."""
        return [u["_id"] for u in self._retry("mongo", list, self.db.users.find({}, {"_id": 1}).sort("_id", 1))]
