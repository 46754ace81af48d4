"""The dedup settings, read once: ZHDEDUP_SIMHASH_K and friends -> fingerprint.neardup.NearDupParams."""
from __future__ import annotations

from fingerprint import semantic
from fingerprint.neardup import NearDupParams
from pipelines import settings as defaults   # every pipeline setting's default, declared once
from pipelines.errors import CrawlCannotStart


def dedup_params(settings) -> NearDupParams:
    """NearDupParams from the settings; a bad value raises CrawlCannotStart (nothing fetched yet)."""
    try:
        params = NearDupParams(k=settings.getint("ZHDEDUP_SIMHASH_K", defaults.ZHDEDUP_SIMHASH_K),
                               min_shared=settings.getint("ZHDEDUP_SKETCH_MIN_SHARED", defaults.ZHDEDUP_SKETCH_MIN_SHARED),
                               min_coverage=settings.getfloat("ZHDEDUP_PASSAGE_COVERAGE", defaults.ZHDEDUP_PASSAGE_COVERAGE),
                               max_candidates=settings.getint("ZHDEDUP_PASSAGE_CANDIDATES", defaults.ZHDEDUP_PASSAGE_CANDIDATES),
                               passages=settings.getbool("ZHDEDUP_PASSAGES", defaults.ZHDEDUP_PASSAGES),
                               rewrites=settings.getbool("ZHDEDUP_REWRITES", defaults.ZHDEDUP_REWRITES),
                               semantic=settings.getfloat("ZHDEDUP_SEMANTIC", defaults.ZHDEDUP_SEMANTIC))
    except ValueError as exc:
        raise CrawlCannotStart(f"bad dedup setting: {exc} (ZHDEDUP_SIMHASH_K, ZHDEDUP_SKETCH_MIN_SHARED, "
                               "ZHDEDUP_PASSAGE_COVERAGE, ZHDEDUP_PASSAGE_CANDIDATES, ZHDEDUP_SEMANTIC)") from None
    if params.semantic > 0 and not semantic.available():
        raise CrawlCannotStart(f"ZHDEDUP_SEMANTIC={params.semantic} needs {semantic.PACKAGE} "
                               "(pip install -e '.[semantic]'), or ZHDEDUP_SEMANTIC=0")
    return params
