from fingerprint.compare import (containment, minhash, shingle_jaccard, shingles, top_sentences_signature,
                                 winnowing_fingerprints)


def test_methods_rank_copies_above_other_texts(chapters):
    a, other = chapters[0]["text"], chapters[1]["text"]
    copy = a[:2000] + "新的一句话。" + a[2000:]
    assert shingle_jaccard(a, copy) > 0.95 > shingle_jaccard(a, other)
    assert minhash(a).jaccard(minhash(copy)) > 0.9 > minhash(a).jaccard(minhash(other))
    assert top_sentences_signature(a) == top_sentences_signature(copy) != top_sentences_signature(other)
    wa = winnowing_fingerprints(a)
    assert containment(wa, winnowing_fingerprints(copy)) > 0.95
    assert containment(wa, winnowing_fingerprints(other)) < 0.05


def test_minhash_is_stable_across_calls_and_empty_inputs_are_safe():
    assert list(minhash("同一段文字，同一个指纹。").digest()) == list(minhash("同一段文字，同一个指纹。").digest())
    assert shingles("") == set() and containment(set(), {1}) == 0.0
