"""Rendered capture when a match is confirmed (crawler.capture renders it), chained into the evidence log
and stamped at once when a TSA is configured (no crawl may be running to stamp it)."""
from __future__ import annotations

import logging
from typing import Any

from crawler.capture import CaptureFailed, CaptureOff, Capturer  # noqa: F401 - admin.matches imports the errors here

logger = logging.getLogger(__name__)


def capture_match(store: Any, match: dict) -> int:
    """Capture a match's page into the evidence log and stamp the new head when a TSA is configured; returns
    the capture's seq. CaptureOff / CaptureFailed when there is no capture; a TSA failure only leaves it
    unstamped (status says since when)."""
    capture = Capturer.from_settings().capture(str(match.get("suspect_url") or ""))
    seq = store.evidence.add_capture(str(match["_id"]), capture)
    _stamp_now(store)
    return seq


def _stamp_now(store: Any) -> None:
    """Stamp the head at once (no crawl may be running to do it); failures are reported by status."""
    from admin.evidence_pack import tsa_settings
    from storage.timestamping import TimestampError, make_client_or_none

    cfg = tsa_settings()
    try:
        client = make_client_or_none(cfg["url"], cfg["ca"], cfg["timeout"])
        if client is not None:
            store.evidence.stamp_head(client)
    except TimestampError as exc:
        logger.warning("capture chained but not timestamped yet: %s", exc)
