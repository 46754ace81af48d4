"""The previous page-kind and extraction code, loaded from git history at run time (baseline for benchmarks).

``old_modules()`` writes ``crawler/pagekind.py`` and ``pipelines/{extract,boilerplate_zh,extraction_encoding}.py``
as they were at BASELINE into a temporary package and imports it, so a benchmark can print the old figures
next to the new ones in the same run without a frozen copy in the tree.
"""
from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "420c9c1"   # the last commit before extraction became its own package (issue 14) and issue 15
FILES = {"pagekind": "crawler/pagekind.py", "extract": "pipelines/extract.py",
         "boilerplate_zh": "pipelines/boilerplate_zh.py", "extraction_encoding": "pipelines/extraction_encoding.py"}


def old_modules(commit: str = BASELINE) -> SimpleNamespace:
    """pagekind and extract modules as of `commit` (imports rewritten to the temporary package)."""
    pkg = f"baseline_{commit}"
    if pkg not in sys.modules:
        tmp = Path(tempfile.mkdtemp(prefix="zhdedup-baseline-")) / pkg
        tmp.mkdir()
        (tmp / "__init__.py").write_text("", encoding="utf-8")
        for name, path in FILES.items():
            src = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout
            (tmp / f"{name}.py").write_text(src.replace("from pipelines.", f"from {pkg}."), encoding="utf-8")
        sys.path.insert(0, str(tmp.parent))
    return SimpleNamespace(pagekind=importlib.import_module(f"{pkg}.pagekind"),
                           extract=importlib.import_module(f"{pkg}.extract"))
