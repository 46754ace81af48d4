import json
import subprocess
import sys

import pytest


def run(*args, stdin: bytes | None = None):
    return subprocess.run([sys.executable, "-m", "fingerprint", *args], input=stdin, capture_output=True)


def test_dedup_reports_bad_lines_and_keeps_going(tmp_path, news):
    lines = [json.dumps({"id": n["id"], "text": n["text"]}, ensure_ascii=False) for n in news[:30]]
    lines.insert(3, json.dumps({"id": "copy", "text": news[0]["text"] + "（完）"}, ensure_ascii=False))
    lines += ["{not json", json.dumps({"id": "no-text"}), json.dumps({"id": "blank", "text": "  "})]
    src = tmp_path / "in.jsonl"
    src.write_bytes(("\n".join(lines) + "\n").encode() + b'{"id": "bad", "text": "\xff\xfe"}\n')
    out = tmp_path / "out.jsonl"
    r = run("dedup", str(src), "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 31
    copy = next(row for row in rows if row["id"] == "copy")
    assert copy["duplicate_of"] == news[0]["id"] and copy["distance"] <= 3
    err = r.stderr.decode()
    for reason in ("malformed JSON", 'no "text" field', "empty text", "not UTF-8"):
        assert reason in err
    assert "documents 31" in err


def test_dedup_with_nothing_usable_fails(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text("{oops\n")
    r = run("dedup", str(src))
    assert r.returncode == 1 and b"malformed JSON" in r.stderr


def test_simhash_reads_gbk_files_and_stdin(tmp_path, news):
    text = news[2]["text"]
    gbk = tmp_path / "a.txt"
    gbk.write_bytes(text.encode("gb18030"))
    from_file = run("simhash", str(gbk)).stdout.split()[0]
    from_stdin = run("simhash", "-", stdin=text.encode()).stdout.split()[0]
    assert from_file == from_stdin and len(from_file) == 16


def test_missing_file_is_a_clear_error():
    r = run("simhash", "/nonexistent/file.txt")
    assert r.returncode == 2 and b"No such file" in r.stderr


def test_compare_and_match(tmp_path, chapters):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(chapters[0]["text"])
    b.write_text("广告" + chapters[0]["text"][:1500])
    r = run("compare", str(a), str(b))
    assert b"copy matcher" in r.stdout and b"copy:" in r.stdout
    sources, suspects = tmp_path / "s.jsonl", tmp_path / "p.jsonl"
    sources.write_text("\n".join(json.dumps({"id": c["id"], "text": c["text"]}) for c in chapters[:5]))
    suspects.write_text(json.dumps({"id": "page1", "text": "头" + chapters[3]["text"][500:1500]}) + "\n"
                        + json.dumps({"id": "page2", "text": chapters[30]["text"]}))
    r = run("match", "--sources", str(sources), "--suspects", str(suspects))
    rows = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert [(row["suspect"], row["source"]) for row in rows] == [("page1", chapters[3]["id"])]
    s, e = rows[0]["suspect_spans"][0]
    assert s <= 2 and e >= 990


@pytest.mark.parametrize("size_mb", [10])
def test_huge_document_is_processed(tmp_path, size_mb, chapters):
    big = (chapters[0]["text"] * (size_mb * 1024 * 1024 // len(chapters[0]["text"].encode()) + 1))
    src = tmp_path / "big.jsonl"
    src.write_text(json.dumps({"id": "big", "text": big}, ensure_ascii=False) + "\n")
    r = run("dedup", str(src))
    assert r.returncode == 0 and b"documents 1" in r.stderr


def test_version_names_the_fingerprint_version_and_the_implementation():
    from fingerprint import FINGERPRINT_VERSION

    r = run("--version")
    assert r.returncode == 0
    assert r.stdout.decode().split() == [FINGERPRINT_VERSION, "(compiled", "kernels)"]


@pytest.mark.parametrize("method", ["full", "simhash"])
def test_dedup_workers_give_the_output_of_one_worker(tmp_path, news, method):
    docs = [{"id": n["id"], "text": n["text"]} for n in news[:40]]
    docs += [{"id": f"copy{i}", "text": docs[i]["text"] + "（完）"} for i in range(0, 40, 7)]
    docs += [{"id": f"edit{i}", "text": "。".join(reversed(docs[i]["text"].split("。")))} for i in range(3, 40, 9)]
    # exact copies (same content hash): one worker skips their SimHash and sketch, three compute them
    docs += [{"id": f"exact{i}", "text": docs[i]["text"].replace("，", ",") + "\n"} for i in range(1, 40, 6)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs) + "\n", encoding="utf-8")
    outs = []
    for workers in ("1", "3"):
        out = tmp_path / f"out{workers}.jsonl"
        r = run("dedup", str(src), "--out", str(out), "--method", method, "--workers", workers)
        assert r.returncode == 0, r.stderr
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    rows = [json.loads(line) for line in outs[0].splitlines()]
    assert [row["id"] for row in rows] == [d["id"] for d in docs]
    assert sum(row["duplicate_of"] is not None for row in rows) >= 13
    assert sum(row["method"] == "exact" for row in rows) >= 7


def test_dedup_rejects_bad_k_and_workers_in_one_line(tmp_path):
    for args in (["-k", "99"], ["-k", "x"], ["--workers", "0"], ["--workers", "²"]):
        r = run("dedup", str(tmp_path / "none.jsonl"), *args)
        err = r.stderr.decode()
        assert r.returncode == 2 and "Traceback" not in err
        assert f"error: argument {args[0]}" in err.strip().splitlines()[-1]
