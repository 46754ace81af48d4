"""Library code raises typed errors; only command-line modules turn them into exit codes (as Scrapy's
commands do with UsageError), so a program that embeds the crawler or the store is never exited under it."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("admin", "crawler", "extract", "fingerprint", "pipelines", "storage", "zhdedup_cli")


def is_command_line(path: Path) -> bool:
    """`__main__.py`, `cli.py`, `*_cli.py`, the argparse helper, Scrapy commands and the console script."""
    rel = path.relative_to(ROOT)
    return (path.stem in ("__main__", "cli", "cliparser") or path.stem.endswith("_cli")
            or rel.parts[:2] == ("crawler", "commands") or rel.parts[0] == "zhdedup_cli")


def is_main_guard(node: ast.AST) -> bool:
    """`if __name__ == "__main__":` (a module's own command-line entry)."""
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def exits(tree: ast.AST) -> list[int]:
    """Lines that raise SystemExit or call sys.exit / exit / quit, outside a __main__ guard."""
    found = []

    def visit(node: ast.AST) -> None:
        if is_main_guard(node):
            return
        if isinstance(node, ast.Name) and node.id == "SystemExit":
            found.append(node.lineno)
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = getattr(func.value, "id", "") if isinstance(func, ast.Attribute) else ""
            if (owner == "sys" and name == "exit") or (not owner and name in ("exit", "quit")):
                found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def test_the_check_sees_an_exit():
    assert exits(ast.parse("def f():\n    raise SystemExit(2)\n")) == [2]
    assert exits(ast.parse("import sys\nsys.exit(1)\n")) == [2]
    assert exits(ast.parse("if __name__ == '__main__':\n    raise SystemExit(main())\n")) == []


def test_no_exit_outside_command_line_modules():
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if not is_command_line(path):
                lines = exits(ast.parse(path.read_text(encoding="utf-8")))
                offenders += [f"{path.relative_to(ROOT)}:{line}" for line in lines]
    assert not offenders, "raise a typed error (CrawlCannotStart, StorageError, ...) instead:\n" + "\n".join(offenders)
