"""Errors that storage/ raises, each with a message a person can act on."""
from __future__ import annotations

import re


def mask_credentials(text: str) -> str:
    """A URI (or a message holding one) with user and password hidden: safe for logs, pages and status."""
    return re.sub(r"//[^/@\s]*@", "//***@", text)


class StorageError(Exception):
    """Base class of every error raised by storage/."""


class StorageUnavailable(StorageError):
    """A server (MongoDB or Redis) cannot be reached; the message says which and how to start it."""

    def __init__(self, server: str, detail: str, hint: str | None = None) -> None:
        self.server = server
        self.detail = detail = mask_credentials(detail)   # messages reach logs and terminals
        self.hint = hint
        msg = f"{server} is unavailable: {detail}"
        if hint:
            msg += f"\n  how to fix: {hint}"
        super().__init__(msg)


class BadDocument(StorageError, ValueError):
    """A document cannot be stored as given (too large, invalid text, odd keys); nothing was written."""


class IndexLost(StorageError):
    """A Redis Cluster slot came back empty under a decision (storage/sentinels.py): re-fill, then decide again."""

    def __init__(self, token: bytes | None) -> None:
        self.token = token   # the loss as recorded under the lost key (storage/connection.py)
        super().__init__("a Redis Cluster node lost the index's data during a passage claim")
