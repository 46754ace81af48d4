import pytest

from fingerprint.dna import SEED_PARAMS, DnaParams, dna, dna_containment, initials_text, windows


def test_initials_survive_homophones_and_traditional_script():
    assert initials_text("乾隆說頭髮乾了") == initials_text("干隆说头发干了")
    assert initials_text("他在公园里") == initials_text("她再公元哩")  # homophone swaps
    assert initials_text("abc，。123") == ""


def test_anchored_windows_survive_an_insertion_the_seed_grid_does_not(chapters):
    text = chapters[2]["text"]
    edited = text[:300] + "插入了一小段话。" + text[300:]
    anchored = dna_containment(dna(text), dna(edited))
    grid = dna_containment(dna(text, SEED_PARAMS), dna(edited, SEED_PARAMS))
    assert anchored > 0.9
    assert grid < 0.5
    assert anchored > grid


def test_unrelated_texts_share_little_dna(chapters):
    shared = [dna_containment(dna(a["text"]), dna(b["text"])) for a, b in zip(chapters[:10], chapters[30:40])]
    assert max(shared) < 0.1


def test_windows_cover_the_stream_and_respect_sentence_cuts():
    spans = windows(200, [30, 61, 95, 130, 170], DnaParams(granularity=48))
    assert spans[0][0] == 0 and spans[-1][1] == 200
    assert all(end in (61, 95, 130, 170, 200) for _, end in spans)
    fixed = windows(200, [], SEED_PARAMS)
    assert fixed[0] == (0, 48) and fixed[1] == (24, 72)


def test_values_fit_in_64_bits_and_bad_params_are_refused(chapters):
    assert all(0 <= v < 2 ** 64 for v in dna(chapters[0]["text"]))
    assert dna("") == ()
    with pytest.raises(ValueError):
        DnaParams(levels=10)
    with pytest.raises(ValueError):
        DnaParams(overlap=1.0)
