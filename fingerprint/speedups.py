"""The compiled kernels (fingerprint/_speedups.c), when the install could build them.

They give exactly the fingerprints of the numpy code (tests compare both on real texts), so whether
they are present changes speed, never a fingerprint. ZHDEDUP_NO_SPEEDUPS=1 turns them off. A build left
over from another version of _speedups.c (its KERNELS_VERSION differs) is not used: rebuild it.
"""
from __future__ import annotations

import os
from types import ModuleType

KERNELS_VERSION = 4  # the _speedups.c whose kernels and arguments this package calls


def _load() -> ModuleType | None:
    if os.environ.get("ZHDEDUP_NO_SPEEDUPS", "").strip() not in ("", "0"):
        return None
    try:
        from fingerprint import _speedups
    except ImportError:  # built without a C compiler: the numpy code does the same work
        return None
    if getattr(_speedups, "KERNELS_VERSION", 1) != KERNELS_VERSION:  # stale: other arguments, other kernels
        return None
    return _speedups


KERNEL: ModuleType | None = _load()


def available() -> bool:
    """Whether fingerprints are computed by the compiled kernels."""
    return KERNEL is not None
