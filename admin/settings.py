"""Where the admin keeps its secret key: the environment, else a 0600 file under var/."""
from __future__ import annotations

import os
import secrets
from pathlib import Path


def var_dir() -> Path:
    """The project's state directory (ZHDEDUP_VAR, default ./var), shared with the crawler."""
    return Path(os.environ.get("ZHDEDUP_VAR", "var"))


def load_secret_key() -> str:
    """Sessions must survive restarts: use ZHDEDUP_SECRET_KEY or a generated key kept in var/."""
    env = os.environ.get("ZHDEDUP_SECRET_KEY")
    if env:
        return env
    path = var_dir() / "admin_secret_key"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = path.read_text(encoding="ascii").strip()
        if len(key) >= 32:
            return key
        raise RuntimeError(f"{path} is too short to be a secret key; delete it to regenerate")
    key = secrets.token_hex(32)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(key + "\n")
    os.chmod(path, 0o600)
    return key
