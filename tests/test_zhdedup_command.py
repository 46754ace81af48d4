"""The `zhdedup` console script, run as the installed script runs it (`sys.exit(main())` in a fresh
interpreter): --help lists every subcommand, each answers --help, a mistake is one line and exit 2."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from zhdedup_cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from zhdedup_cli import main; sys.exit(main())"   # what the console script runs
TIMEOUT = 120


def zhdedup(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """`zhdedup ARGS` in a fresh interpreter from the project root."""
    return subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=ROOT, env=dict(os.environ), input=stdin,
                          capture_output=True, text=True, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def helps() -> dict[str, list]:
    """`zhdedup NAME --help` for every subcommand, through the real entry, in one interpreter (fast)."""
    script = ("import contextlib, io, json, sys\nfrom zhdedup_cli import COMMANDS, main\nout = {}\n"
              "for name in COMMANDS:\n    buf = io.StringIO()\n"
              "    with contextlib.redirect_stdout(buf):\n        try:\n            code = main([name, '--help'])\n"
              "        except SystemExit as e:\n            code = e.code\n    out[name] = [code, buf.getvalue()]\n"
              "print(json.dumps(out))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_pyproject_installs_the_command():
    tomllib = pytest.importorskip("tomllib")   # Python 3.11+
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["zhdedup"] == "zhdedup_cli:main"


def test_help_lists_every_subcommand():
    proc = zhdedup("--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: zhdedup"), proc.stderr
    listed = re.findall(r"^    (\S+)", proc.stdout, re.M)
    assert listed == list(COMMANDS)


@pytest.mark.parametrize("module", ["storage", "admin", "crawler", "fingerprint"])
def test_every_module_subcommand_has_a_zhdedup_subcommand(module):
    """A subcommand added to a `python -m` module without its `zhdedup` name fails here."""
    usage = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                           timeout=TIMEOUT).stdout
    choices = re.search(r"\{([a-z,-]+)\}", usage).group(1).split(",")
    assert set(choices) <= set(COMMANDS), set(choices) - set(COMMANDS)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_subcommand_answers_help(helps, name):
    code, out = helps[name]
    assert code == 0 and out.startswith(f"usage: zhdedup {name}"), out


def test_bad_subcommand_is_one_line_and_exit_2():
    proc = zhdedup("bogus")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "invalid choice: 'bogus'" in proc.stderr and "zhdedup --help" in proc.stderr


@pytest.mark.parametrize("args, says", [((), "required: COMMAND"), (("dedup", "x.jsonl", "-k", "99"), "zhdedup dedup"),
                                        (("purge",), "zhdedup purge: error: purge needs"),
                                        (("distributed", "run"), "zhdedup distributed: error")])
def test_usage_mistakes_are_one_line(args, says):
    proc = zhdedup(*args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert says in proc.stderr


def test_subcommand_does_what_the_module_does():
    text = "今天江边的老桥完成了加固，居民们陆续走过石拱桥。\n"
    short = zhdedup("simhash", "-", stdin=text)
    module = subprocess.run([sys.executable, "-m", "fingerprint", "simhash", "-"], cwd=ROOT, input=text,
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert short.returncode == module.returncode == 0 and short.stdout == module.stdout != "", short.stderr
