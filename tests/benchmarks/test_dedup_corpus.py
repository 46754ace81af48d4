"""benchmarks.dedup_corpus: the held-out-looking input of the dedup speed figure."""
import pytest

from benchmarks.shared_data import NEWS_FILE


@pytest.mark.skipif(not NEWS_FILE.exists(), reason="shared data not found (set ZHDEDUP_DATA)")
def test_corpus_is_3000_character_news_with_a_quarter_copies_after_their_originals():
    from benchmarks.dedup_corpus import build

    rows = build(200)
    assert len(rows) == 200 and build(200) == rows  # deterministic
    originals = {r["id"]: r["text"] for r in rows if r["id"].startswith("n")}
    copies = [r for r in rows if r["id"].startswith("c")]
    assert len(copies) == 50 and len(originals) == 150
    assert all(len(t) == 3000 for t in originals.values())
    assert len(set(originals.values())) == 150
    position = {r["id"]: i for i, r in enumerate(rows)}
    for c in copies:  # each copy is a small edit of an original placed before it
        source = max(originals, key=lambda i: sum(a == b for a, b in zip(originals[i][:300], c["text"][:300])))
        assert c["text"] != originals[source] and abs(len(c["text"]) - 3000) < 200
        assert position[source] < position[c["id"]]


@pytest.mark.skipif(not NEWS_FILE.exists(), reason="shared data not found (set ZHDEDUP_DATA)")
def test_whole_process_dedup_benchmark_runs_both_codes_and_finds_the_same_output(capsys):
    import subprocess
    from pathlib import Path

    from benchmarks.bench_fingerprint import DEDUP_BASELINE, bench_dedup_process

    root = Path(__file__).resolve().parents[2]
    if subprocess.run(["git", "cat-file", "-e", f"{DEDUP_BASELINE}^{{commit}}"], cwd=root).returncode:
        pytest.skip(f"baseline commit {DEDUP_BASELINE} not in this clone (shallow?)")
    # the baseline predates issue 27: the same output from the fingerprints without the thesaurus
    bench_dedup_process([40], rounds=1, baseline=DEDUP_BASELINE, now_env={"ZHDEDUP_SYNONYMS": "0"})
    out = capsys.readouterr().out
    assert "output byte-identical: yes" in out
    assert "start-up" in out and "        40  " in out


@pytest.mark.skipif(not NEWS_FILE.exists(), reason="shared data not found (set ZHDEDUP_DATA)")
def test_page_fingerprint_benchmark_runs_both_codes(capsys):
    import subprocess
    from pathlib import Path

    from benchmarks.bench_fingerprint import DEDUP_BASELINE, bench_page_fingerprint

    root = Path(__file__).resolve().parents[2]
    if subprocess.run(["git", "cat-file", "-e", f"{DEDUP_BASELINE}^{{commit}}"], cwd=root).returncode:
        pytest.skip(f"baseline commit {DEDUP_BASELINE} not in this clone (shallow?)")
    bench_page_fingerprint(12, rounds=2, baseline=DEDUP_BASELINE)
    row = capsys.readouterr().out.strip().splitlines()[-1]
    assert row.endswith(tuple("0123456789")) and "x" in row and "->" in row
