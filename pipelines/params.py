"""The dedup settings, read once: ZHDEDUP_SIMHASH_K and friends -> fingerprint.neardup.NearDupParams."""
from __future__ import annotations

import logging

from fingerprint.neardup import NearDupParams
from pipelines import settings as defaults   # every pipeline setting's default, declared once

logger = logging.getLogger(__name__)


def dedup_params(settings) -> NearDupParams:
    """NearDupParams from the settings; a bad value stops the crawl before anything is fetched (exit 2)."""
    try:
        return NearDupParams(k=settings.getint("ZHDEDUP_SIMHASH_K", defaults.ZHDEDUP_SIMHASH_K),
                             min_shared=settings.getint("ZHDEDUP_SKETCH_MIN_SHARED", defaults.ZHDEDUP_SKETCH_MIN_SHARED),
                             min_coverage=settings.getfloat("ZHDEDUP_PASSAGE_COVERAGE", defaults.ZHDEDUP_PASSAGE_COVERAGE),
                             max_candidates=settings.getint("ZHDEDUP_PASSAGE_CANDIDATES", defaults.ZHDEDUP_PASSAGE_CANDIDATES),
                             passages=settings.getbool("ZHDEDUP_PASSAGES", defaults.ZHDEDUP_PASSAGES))
    except ValueError as exc:
        logger.critical("bad dedup setting: %s (ZHDEDUP_SIMHASH_K, ZHDEDUP_SKETCH_MIN_SHARED, "
                        "ZHDEDUP_PASSAGE_COVERAGE, ZHDEDUP_PASSAGE_CANDIDATES)", exc)
        raise SystemExit(2) from None
