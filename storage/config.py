"""StoreConfig: every storage setting in one place, with readable defaults and env overrides."""
from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fingerprint.neardup import NearDupParams

ENV = {
    "mongo_uri": "MONGO_URI",
    "redis_url": "REDIS_URL",
    "var_dir": "ZHDEDUP_VAR",
    "db_name": "ZHDEDUP_DB",
    "key_prefix": "ZHDEDUP_PREFIX",
}


@dataclass(frozen=True)
class StoreConfig:
    """Where the data lives. None URIs mean: start/reuse the embedded servers under var_dir."""

    mongo_uri: str | None = None
    redis_url: str | None = None
    var_dir: str = "var"
    db_name: str = "zhdedup"
    key_prefix: str = "zhd:"
    simhash_k: int = 3
    retry_seconds: float = 5.0       # how long a failing operation is retried before spooling
    timeout_seconds: float = 2.0     # per attempt connect / server-selection timeout
    auto_restart: bool = True        # restart a dead embedded server mid-crawl
    replay_spool: bool = True        # replay var/spool/*.jsonl when the store opens
    phantom_seconds: float = 120.0   # an indexed page still missing from MongoDB after this was never saved
    retry_writes: bool | None = None  # the driver's retryable writes; None: off for the embedded server
    dedup_params: "NearDupParams | None" = None  # the crawl's dedup settings: recorded with deferred decisions
    trace_decisions: bool = False    # the spool replay logs its verdicts at INFO (ZHDEDUP_TRACE_DECISIONS)
    adopt_undecided_seconds: float = 3600.0  # a page undecided this long, its spool elsewhere, is decided at open

    @classmethod
    def from_env(cls, **overrides: Any) -> "StoreConfig":
        """Defaults, then MONGO_URI / REDIS_URL / ZHDEDUP_VAR / ZHDEDUP_DB / ZHDEDUP_PREFIX, then overrides."""
        values: dict[str, Any] = {}
        for field, env in ENV.items():
            if os.environ.get(env):
                values[field] = os.environ[env]
        values.update({k: v for k, v in overrides.items() if v is not None})
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise TypeError(f"unknown StoreConfig setting(s): {', '.join(sorted(unknown))}")
        if "var_dir" in values:
            values["var_dir"] = str(values["var_dir"])
        return cls(**values)

    def with_(self, **changes: Any) -> "StoreConfig":
        """A copy with some settings changed."""
        return replace(self, **changes)

    @property
    def var_path(self) -> Path:
        """var_dir as an absolute path."""
        return Path(self.var_dir).resolve()

    @property
    def spool_dir(self) -> Path:
        """Where writes that could not reach a server wait for replay."""
        return self.var_path / "spool"
