"""The package layout stays readable (issue 25, "A house built from parts"): modules a reader can take in at
once, packages that use one another's public names only, admin views that never import a command-line module,
and admin modules without import cycles. Each check is tried on a small broken example first, so it can fail."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("admin", "crawler", "extract", "fingerprint", "pipelines", "storage", "zhdedup_cli")
MAX_LINES = 500

# Modules still over MAX_LINES, each with why it is not split yet. The list may only shrink: a module that
# comes under the limit must leave it (test_the_known_long_modules_are_still_long), a new one may not join.
KNOWN_LONG: dict[str, str] = {}


def product_modules() -> list[Path]:
    """Every .py file of the product packages (tests and benchmarks aside)."""
    return [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]


def rel(path: Path, root: Path = ROOT) -> str:
    return path.relative_to(root).as_posix()


def module_name(path: Path) -> str:
    """Dotted name of a product module (a package's __init__ is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_command_line(path: Path) -> bool:
    """`__main__.py`, `cli.py`, `*_cli.py`, Scrapy commands and the console script (as test_no_exit_in_library)."""
    parts = path.relative_to(ROOT).parts
    return (path.stem in ("__main__", "cli") or path.stem.endswith("_cli")
            or parts[:2] == ("crawler", "commands") or parts[0] == "zhdedup_cli")


def is_main_guard(node: ast.AST) -> bool:
    """`if __name__ == "__main__":` (a module's own command-line entry, which may import a command line)."""
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of the tree outside `if __name__ == "__main__":` blocks."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        if not is_main_guard(node):
            out.append(node)
            todo.extend(ast.iter_child_nodes(node))
    return out


def imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str, str | None]]:
    """(line, imported module, imported name or None) for every import, lazy ones inside functions too
    (not under a __main__ guard); relative imports resolved against `module`."""
    out: list[tuple[int, str, str | None]] = []
    for node in sorted(nodes(tree), key=lambda n: getattr(n, "lineno", 0)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[:len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            out += [(node.lineno, base, a.name) for a in node.names]
    return out


def parsed(path: Path) -> tuple[str, list[tuple[int, str, str | None]]]:
    name = module_name(path)
    return name, imports(ast.parse(path.read_text(encoding="utf-8")), name, path.stem == "__init__")


# ---- modules a reader can take in ------------------------------------------------------------------------
def long_modules(paths: list[Path], root: Path = ROOT) -> dict[str, int]:
    """{module path: lines} of the modules over MAX_LINES."""
    counts = {rel(p, root): len(p.read_text(encoding="utf-8").splitlines()) for p in paths}
    return {name: n for name, n in counts.items() if n > MAX_LINES}


def test_the_length_check_sees_a_long_module(tmp_path):
    long, short = tmp_path / "long.py", tmp_path / "short.py"
    long.write_text("x = 1\n" * (MAX_LINES + 1))
    short.write_text("x = 1\n" * MAX_LINES)
    assert long_modules([long, short], tmp_path) == {"long.py": MAX_LINES + 1}


def test_no_product_module_is_over_500_lines():
    over = {name: n for name, n in long_modules(product_modules()).items() if name not in KNOWN_LONG}
    assert not over, (f"split these into modules of at most {MAX_LINES} lines (one part each, as "
                      "storage/redis_index/ and crawler/distributed/ are):\n"
                      + "\n".join(f"{name}: {n} lines" for name, n in sorted(over.items())))


def test_the_known_long_modules_are_still_long():
    long = long_modules(product_modules())
    shrunk = sorted(name for name in KNOWN_LONG if name not in long)
    assert not shrunk, "take these off KNOWN_LONG (the list only shrinks):\n" + "\n".join(shrunk)


# ---- packages use one another's public names only --------------------------------------------------------
def private_imports(module: str, found: list[tuple[int, str, str | None]]) -> list[tuple[int, str]]:
    """Imports of a `_private` name (or module) of ANOTHER top-level package."""
    own = module.split(".")[0]
    out = []
    for line, target, name in found:
        if target.split(".")[0] == own or target.split(".")[0] not in PACKAGES:
            continue
        dotted = f"{target}.{name}" if name else target
        if any(part.startswith("_") and not part.startswith("__") for part in dotted.split(".")):
            out.append((line, dotted))
    return out


def test_the_private_check_sees_a_private_import():
    tree = ast.parse("from storage.redis_index import glob_escape\nfrom storage.x import _y\n"
                     "import pipelines._store\nfrom .spool import _z\ndef f():\n    from fingerprint import _tables\n")
    found = private_imports("crawler.a", imports(tree, "crawler.a", False))
    assert found == [(2, "storage.x._y"), (3, "pipelines._store"), (6, "fingerprint._tables")]
    # within its own package a module may use a sibling's private name
    assert private_imports("storage.a", imports(tree, "storage.a", False)) == [(3, "pipelines._store"),
                                                                             (6, "fingerprint._tables")]


def test_no_package_imports_another_packages_private_names():
    offenders = []
    for path in product_modules():
        name, found = parsed(path)
        offenders += [f"{rel(path)}:{line} imports {dotted}" for line, dotted in private_imports(name, found)]
    assert not offenders, "make the name public in its package, or move the code that needs it:\n" + "\n".join(offenders)


# ---- library code never imports a command-line module ---------------------------------------------------
def cli_imports(found: list[tuple[int, str, str | None]]) -> list[tuple[int, str]]:
    """Imports of a command-line module (`cli`, `*_cli`, `__main__`), by module or by `from package import`."""
    out = []
    for line, target, name in found:
        for dotted in (target, f"{target}.{name}" if name else target):
            last = dotted.rsplit(".", 1)[-1]
            if dotted.split(".")[0] in PACKAGES and (last in ("cli", "__main__") or last.endswith("_cli")):
                out.append((line, dotted))
                break
    return list(dict.fromkeys(out))   # `from x_cli import a, b` once


def test_the_cli_check_sees_a_view_importing_a_cli_module():
    tree = ast.parse("from admin.evidence_cli import write_pack, tsa_settings\nfrom admin import notices_cli\n"
                     "from admin.evidence_pack import write_pack\ndef f():\n    from admin.cli import open_default_store\n")
    assert cli_imports(imports(tree, "admin.matches", False)) == [
        (1, "admin.evidence_cli"), (2, "admin.notices_cli"), (5, "admin.cli")]
    entry = ast.parse("if __name__ == '__main__':\n    from extract.__main__ import main\n")
    assert cli_imports(imports(entry, "pipelines.extract", False)) == []


def test_no_library_module_imports_a_command_line_module():
    """Views (admin's blueprints) and library code share logic through library modules (admin/db.py,
    admin/evidence_pack.py, admin/source_import.py, admin/takedown.py), never through a *_cli module."""
    offenders = []
    for path in product_modules():
        if not is_command_line(path):
            name, found = parsed(path)
            offenders += [f"{rel(path)}:{line} imports {dotted}" for line, dotted in cli_imports(found)]
    assert not offenders, "move the shared code out of the command-line module:\n" + "\n".join(offenders)


# ---- admin modules import one another without cycles -----------------------------------------------------
def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of `package` it imports (lazy imports too); `from package import sub` is an
    edge to the submodule when there is one, else to the package's __init__."""
    paths = sorted((ROOT / package).rglob("*.py"))
    names = {module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        name, found = parsed(path)
        edges = set()
        for _, target, imported in found:
            sub = f"{target}.{imported}" if imported else None
            dest = sub if sub in names else target
            if dest in names and dest != name:
                edges.add(dest)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected part that has one (Tarjan), each as a sorted list of modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_check_sees_a_cycle():
    assert cycles({"a.cli": {"a.evidence_cli"}, "a.evidence_cli": {"a.cli"}, "a.db": set()}) == [
        ["a.cli", "a.evidence_cli"]]
    assert cycles({"a.cli": {"a.evidence_cli", "a.db"}, "a.evidence_cli": {"a.db"}, "a.db": set()}) == []


def test_admin_modules_import_one_another_without_cycles():
    found = cycles(import_graph("admin"))
    assert not found, "admin modules that import one another (shared code belongs in a module both import):\n" + \
        "\n".join(" <-> ".join(c) for c in found)
