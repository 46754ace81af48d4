"""SIGTERM ends a benchmark as Ctrl-C does: its finally blocks kill the crawls and stop the servers it started.

Python's default for SIGTERM ends the process at once, and a benchmark's crawlers and embedded servers then
outlived it (a crawler still running restarts the servers a cleanup stopped).
"""
from __future__ import annotations

import signal


def exit_on_sigterm() -> None:
    """From now on SIGTERM raises SystemExit(143) in the main thread; a second one waits for the cleanup."""
    signal.signal(signal.SIGTERM, _exit)


def _exit(signum: int, _frame: object) -> None:
    """The handler: later SIGTERMs ignored, so the cleanup this starts is not cut short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)
