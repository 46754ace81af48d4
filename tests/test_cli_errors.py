"""Every command line of the project, run as a user runs it, with the mistakes a newcomer makes:
exit code 2 (1 for "nothing usable"), the problem on one line, never a traceback; --help everywhere."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 120


def run(*args: str, env: dict[str, str] | None = None, stdin: str | None = None,
        cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`python -m ARGS` from the project root, stdin closed unless given."""
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env={**os.environ, **(env or {})},
                          input=stdin if stdin is not None else "", capture_output=True, text=True,
                          timeout=TIMEOUT)


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    """Exit code, no traceback, and the message on the last line of stderr; returns that line."""
    err = proc.stderr
    assert proc.returncode == code, f"exit {proc.returncode}:\n{err[-3000:]}"
    assert "Traceback" not in err and "Exception ignored" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    for needle in needles:
        assert needle in last, f"{needle!r} not in the last line {last!r}"
    return last


def store_env(config) -> dict[str, str]:
    """Environment that points a subprocess at a test store."""
    return {"MONGO_URI": config.mongo_uri, "REDIS_URL": config.redis_url, "ZHDEDUP_DB": config.db_name,
            "ZHDEDUP_PREFIX": config.key_prefix, "ZHDEDUP_VAR": str(config.var_dir)}


def closed_pipe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m ARGS | head -0`: the reader is gone before the first write."""
    proc = subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.wait(TIMEOUT)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", err)


# --- python -m fingerprint ------------------------------------------------------------------------

@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A JSONL corpus large enough to fill a pipe."""
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": f"第{i}条：今天江边的老桥完成了加固，居民们陆续走过石拱桥。"},
                                       ensure_ascii=False) + "\n" for i in range(400)), encoding="utf-8")
    return path


def test_fingerprint_k_out_of_range_names_the_range(corpus):
    assert_one_line_error(run("fingerprint", "dedup", "-k", "99", str(corpus)), 2, "-k", "99", "from 0 to 8")
    assert_one_line_error(run("fingerprint", "dedup", "-k", "two", str(corpus)), 2, "not a whole number")


def test_fingerprint_non_string_text_is_named_as_such(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": 1, "text": 12345}\n{"id": 2, "text": "  "}\n', encoding="utf-8")
    proc = run("fingerprint", "dedup", str(path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{path}:1: skipped, \"text\" is not a string (got int)" in proc.stderr
    assert f"{path}:2: skipped, empty text" in proc.stderr


def test_fingerprint_bad_paths_are_one_line(tmp_path, corpus):
    assert_one_line_error(run("fingerprint", "dedup", str(tmp_path / "missing.jsonl")), 2, "missing.jsonl",
                          "No such file")
    assert_one_line_error(run("fingerprint", "dedup", str(corpus), "--out", str(tmp_path / "no" / "out.jsonl")),
                          2, "out.jsonl", "No such file")
    assert_one_line_error(run("fingerprint", "simhash", str(tmp_path)), 2, "Is a directory")
    assert_one_line_error(run("fingerprint", "match", "--sources", str(corpus)), 2, "--suspects")


def test_fingerprint_compare_warns_on_empty_input(tmp_path):
    empty, text = tmp_path / "empty.txt", tmp_path / "a.txt"
    empty.write_text("", encoding="utf-8")
    text.write_text("今天江边的老桥完成了加固。", encoding="utf-8")
    proc = run("fingerprint", "compare", str(empty), str(text))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert f"warning: {empty} has no text" in proc.stderr and str(text) not in proc.stderr


def test_fingerprint_closed_pipe_ends_quietly(corpus):
    proc = closed_pipe("fingerprint", "dedup", str(corpus))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr


# --- python -m admin ------------------------------------------------------------------------------

def test_admin_password_from_empty_stdin(store_config, store):
    env = store_env(store_config)
    assert_one_line_error(run("admin", "users", "add", "carol", env=env), 2, "no password")
    assert_one_line_error(run("admin", "users", "add", "carol", "--password-stdin", env=env), 2,
                          "no password on standard input")
    assert store.db.users.find_one({"_id": "carol"}) is None


def test_admin_matches_header_and_closed_pipe(store_config, store):
    for i in range(3):
        store.matches.save({"suspect_url": f"http://p.example/{i}", "site": "p.example", "source_id": "s1",
                            "score": 0.5})
    env = store_env(store_config)
    proc = run("admin", "matches", env=env)
    assert proc.returncode == 0 and proc.stdout.splitlines()[0] == "id\tstatus\tscore\tsource_id\tsuspect_url"
    for args in (("matches", "--json"), ("matches",)):
        done = closed_pipe("admin", *args, env=env)
        assert done.returncode == 0 and "Traceback" not in done.stderr and "Exception" not in done.stderr, done.stderr


def test_admin_usage_mistakes(store_config, tmp_path):
    env = store_env(store_config)
    assert_one_line_error(run("admin", "matches", "--limit", "0", env=env), 2, "--limit", "1 or more")
    assert_one_line_error(run("admin", "sources", "add", str(tmp_path / "nope.txt"), env=env), 2,
                          "nope.txt: no such file")
    assert_one_line_error(run("admin", "frobnicate"), 2, "invalid choice")


# --- python -m storage, python -m crawler, python -m pipelines.extract ----------------------------

def test_storage_unusable_var_dir_and_usage(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    env = {"ZHDEDUP_VAR": str(blocker / "var"), "MONGO_URI": "", "REDIS_URL": ""}
    assert_one_line_error(run("storage", "start", env=env), 2, str(blocker))
    assert_one_line_error(run("storage", "purge", env=env), 2, "purge needs --site, --url or --before")


def test_crawler_demo_port_out_of_range():
    assert_one_line_error(run("crawler", "demo", "--port", "99999"), 2, "--port", "99999", "0 (any free ports)")
    assert_one_line_error(run("crawler", "serve-demo", "--port", "http"), 2, "not a port number")


def test_extract_bad_path(tmp_path):
    assert_one_line_error(run("pipelines.extract", str(tmp_path / "missing.html")), 2, "missing.html",
                          "No such file")
    assert_one_line_error(run("pipelines.extract", str(tmp_path)), 2, "Is a directory")


# --- --help on every subcommand ---------------------------------------------------------------------

HELP = [("fingerprint", s) for s in ("simhash", "dna", "dedup", "compare", "match")] + \
       [("admin", "serve"), ("admin", "users", "add"), ("admin", "users", "list"), ("admin", "sources", "add"),
        ("admin", "sources", "list"), ("admin", "sources", "remove"), ("admin", "matches")] + \
       [("storage", s) for s in ("status", "start", "stop", "rebuild-index", "replay-spool", "purge")] + \
       [("crawler", "demo"), ("crawler", "serve-demo"), ("pipelines.extract",)]


@pytest.mark.parametrize("command", HELP, ids=" ".join)
def test_help_says_what_every_argument_is(command):
    proc = run(*command, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage:"), proc.stderr
    options = proc.stdout.split("\n\n", 1)[1]
    lines = [ln for ln in options.splitlines() if ln.startswith("  ") and not ln.startswith("   ")]
    bare = [ln for ln in lines if len(ln.strip().split("  ")) < 2 and not ln.rstrip().endswith(",")]
    # an argument line without a description has no run of two spaces after its name ...
    undescribed = [ln for ln in bare if not _continues(options, ln)]
    assert not undescribed, f"arguments without help in `{' '.join(command)} --help`:\n{proc.stdout}"


def _continues(text: str, line: str) -> bool:
    """... unless argparse put the description on the next, deeper-indented line."""
    after = text.split(line, 1)[1].lstrip("\n").splitlines()
    return bool(after) and after[0].startswith("    ") and after[0].strip() != ""


@pytest.mark.parametrize("args", [("fingerprint", "dedup", "x.jsonl", "-k", "99"), ("fingerprint", "--nope"),
                                  ("storage", "purge", "--before"), ("admin", "matches", "--limit", "x"),
                                  ("crawler", "demo", "--bogus"), ("extract",), ("crawler.distributed", "run")])
def test_usage_mistakes_are_exactly_one_line(args):
    """argparse's usage block is not printed: one line names the mistake and where --help is."""
    proc = run(*args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "error:" in proc.stderr and "--help" in proc.stderr
