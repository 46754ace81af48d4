"""Tables built from code and data at run time, kept on disk so later processes load them instead.

A table's file is named by a digest of everything it is built from (the builder's source, its data files,
the Unicode version), so a change to any of them builds a new file and never reads a stale one. The
folder is $ZHDEDUP_CACHE_DIR, else $XDG_CACHE_HOME/zhdedup, else ~/.cache/zhdedup; a read-only or
missing folder only costs the build.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

import numpy as np


STALE_DAYS = 30  # a table's file of another digest older than this goes when a new one is written

# numpy parses every .npy header with ast.literal_eval, and CPython 3.11 counts the AST constructor's recursion
# depth per interpreter, not per thread: two threads building ASTs at once can fail with "SystemError: AST
# constructor recursion depth mismatch" (python/cpython#106905). A crawl met it when two of its store threads
# loaded the synonym table at once, and lost that page's decision. Our table readers all take this lock.
AST_LOCK = threading.RLock()


def cache_dir() -> Path:
    """The folder of the cached tables."""
    root = os.environ.get("ZHDEDUP_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zhdedup"
    return Path(root)


def digest(parts: Iterable[bytes]) -> str:
    """24 hex characters naming the parts, each length-prefixed so that no two lists of parts collide."""
    h = hashlib.blake2b(digest_size=12)
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def cached_array(name: str, parts: Iterable[bytes], build: Callable[[], np.ndarray]) -> np.ndarray:
    """build()'s array, loaded from `name-DIGEST.npy` when an earlier process saved it (saved here if not)."""
    path = cache_dir() / f"{name}-{digest(parts)}.npy"
    try:
        with AST_LOCK:
            return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        pass
    array = build()
    save_atomic(path, lambda f: np.save(f, array, allow_pickle=False))
    return array


def load_npz(path: Path, names: Iterable[str]) -> dict[str, np.ndarray]:
    """The named arrays of an .npz file, read under AST_LOCK (each array's header is parsed as it is read)."""
    with AST_LOCK, np.load(path, allow_pickle=False) as z:
        return {name: z[name] for name in names}


def save_atomic(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """write(file) into a temporary file renamed to path: a reader sees the whole file or none; a read-only
    or missing folder only costs the build next time."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:   # e.g. the folder is below a file: unlink too says ENOTDIR, not "missing"
            pass
        return
    prune(path)


def prune(path: Path, max_age_days: float = STALE_DAYS) -> None:
    """Remove the same table's files of other digests not written for max_age_days: each upgrade leaves one
    (the segmenter's is 9.4 MB); another version still in use only rebuilds its own."""
    name, _, _ = path.name.rpartition("-")
    cutoff = time.time() - max_age_days * 86400
    for other in path.parent.glob(f"{name}-*{path.suffix}"):
        try:
            if other != path and other.name.rpartition("-")[0] == name and other.stat().st_mtime < cutoff:
                other.unlink()
        except OSError:
            pass
