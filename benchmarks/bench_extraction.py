"""Body extraction accuracy and speed: the product (ExtractPipeline's article_fields) next to plain trafilatura.extract().

  python -m benchmarks.bench_extraction [--split tune|report|all] [--repeat N] [--json OUT] [--previous COMMIT]

``--split`` keeps rule tuning and reporting apart: the real pages are split by SITE (a stable hash of
the site name, ``half_of``); boilerplate rules are tuned on the ``tune`` half only and figures are
reported on the ``report`` half.  The previous extraction code (``PREVIOUS``, loaded from git history)
runs in the same process next to the current code and trafilatura.

Word-level scores: jieba tokens (punctuation and whitespace dropped) as a bag of words; precision,
recall and F1 of the extracted body against the hand-made gold body (tests/extract/gold/gne, see its
README).  A page whose gold is empty (list page) scores 1.0 when the extractor returns nothing and 0.0
otherwise.  Also: readability_zh reference pages (expected.html as gold) and the trafilatura_zh
"with"/"without" snippets; the Chinese-Web-Content-Extraction-Dataset (69 pages, *.cleaned.txt gold) and
newspaper4k's 3 pages, scored the same way; the twnews Taiwan pages, whose tests assert only one body
sentence, as a recall check (sentence found or not); the 74 NetEase finance pages (no gold) as a tail
check: how many bodies keep dated headline lists, related headings or share/disclaimer lines.  Per data set: means, and the pages furthest below
trafilatura.  Time per page (best of --repeat) for the product, trafilatura and the previous code, page by page in
one run.
Goals (issue 29): on the report half (sites never tuned on) P and F1 >= 0.98 on the project's own pages,
P and F1 >= 0.97 on held-out news, F1 >= trafilatura + 0.03 on other public sets with no page more than
0.10 below trafilatura's F1; time <= 1.0x trafilatura's per page.  (Issue 9: F1 >= 0.95 on the 44 pages.)
"""
from __future__ import annotations

import hashlib
import importlib
import json
import re
import subprocess
import sys
import tempfile
import statistics
import time
from collections import Counter
from pathlib import Path

import jieba
import lxml.html
import trafilatura

from extract.article import MAX_BYTES, MIN_CHARS
from fingerprint.cliparser import OneLineParser
from pipelines.extract import article_fields

ROOT = Path(__file__).resolve().parents[1]
from benchmarks.shared_data import HTML_DIR as DATA

PREVIOUS = "4ed00ed"  # main when issue 15's site templates and precision rules began
SPLITS = ("tune", "report", "all")

GOLD = ROOT / "tests" / "extract" / "gold" / "gne"
WORD = re.compile(r"\w", re.U)
jieba.setLogLevel(60)


def tokens(text: str) -> Counter:
    """Bag of jieba words, punctuation and whitespace dropped."""
    return Counter(t for t in jieba.lcut(text or "") if WORD.search(t))


def prf(gold: str, got: str) -> tuple[float, float, float]:
    """Word-level precision, recall, F1 (empty gold: 1.0 only for empty output)."""
    g, o = tokens(gold), tokens(got)
    if not g:
        return (1.0, 1.0, 1.0) if not o else (0.0, 1.0, 0.0)
    if not o:
        return 0.0, 0.0, 0.0
    common = sum((g & o).values())
    p, r = common / sum(o.values()), common / sum(g.values())
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def product(raw: bytes, url: str = "") -> str:
    """The product's body text ('' when it reports no body), through the function the crawl's ExtractPipeline
    calls (pipelines.extract.article_fields, default settings)."""
    fields, _skipped = article_fields(raw, url, None, None, MIN_CHARS, False, MAX_BYTES)
    return fields["text"] if fields else ""


def site_of(page: str) -> str:
    """The site a gold page comes from: tests_163_2 -> 163, readability:qq -> qq, cwce:sohu/1a2b -> sohu,
    novel:X -> novel."""
    if ":" in page:
        kind, name = page.split(":", 1)
        if kind in SITE_NAMED:
            return name.split("/")[0]
        return name if kind == "readability" else kind
    m = re.match(r"^tests?_(?:list_page_)?(.+?)_[^_]+$", page)
    return m.group(1) if m else page


def half_of(site: str) -> str:
    """'tune' or 'report': a stable hash of the site name, so one site's pages are never in both halves."""
    return "tune" if hashlib.sha1(site.encode("utf-8")).digest()[0] % 2 == 0 else "report"


def in_split(page: str, split: str) -> bool:
    """Whether a page belongs to the split (generated novel pages only to 'all': they are not real sites)."""
    if split == "all":
        return True
    return not page.startswith("novel:") and half_of(site_of(page)) == split


def previous_extract(commit: str = PREVIOUS):
    """extract() of the extract package as of `commit`, imported from git history as a temporary package."""
    pkg = f"extract_{commit}"
    if pkg not in sys.modules:
        tmp = Path(tempfile.mkdtemp(prefix="zhdedup-extract-")) / pkg
        tmp.mkdir()
        names = subprocess.run(["git", "ls-tree", "--name-only", commit, "extract/"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.split()
        for path in names:
            if path.endswith(".py"):
                src = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True,
                                     text=True, check=True).stdout
                (tmp / Path(path).name).write_text(src.replace("from extract.", f"from {pkg}."), encoding="utf-8")
        sys.path.insert(0, str(tmp.parent))
    return importlib.import_module(f"{pkg}.article")


def set_previous(commit: str) -> None:
    """Compare with the extract package as of `commit` (a name git knows) instead of PREVIOUS."""
    global PREVIOUS
    PREVIOUS = subprocess.run(["git", "rev-parse", "--short", commit], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()


def previous(raw: bytes) -> str:
    """The previous code's body text ('' when it reports no body)."""
    old = previous_extract(PREVIOUS)
    try:
        return old.extract(raw).text
    except old.NotArticle:
        return ""


def plain(raw: bytes) -> str:
    """trafilatura.extract with its defaults."""
    return trafilatura.extract(raw) or ""


def timed(fn, raw: bytes, repeat: int) -> tuple[str, float]:
    """Output and best-of-N wall time in ms."""
    best, out = float("inf"), ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(raw)
        best = min(best, time.perf_counter() - t0)
    return out, best * 1000


def gne_gold() -> dict[str, str]:
    """Gold bodies: gold/gne/*.txt, or rebuilt from gne_selection.json when the .txt files are absent
    (the news text belongs to the sites; the selection file alone reproduces the gold)."""
    selection = json.loads((GOLD.parent / "gne_selection.json").read_text(encoding="utf-8"))
    out, builder = {}, None
    for name in sorted(selection):
        txt = GOLD / f"{name}.txt"
        if txt.exists():
            out[name] = txt.read_text(encoding="utf-8")
            continue
        if builder is None:
            import importlib.util
            import sys
            sys.path.insert(0, str(GOLD.parent))
            spec = importlib.util.spec_from_file_location("build_gold", GOLD.parent / "build_gold.py")
            builder = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(builder)
        out[name] = builder.build(name, selection[name])
    return out


def gold_pages() -> list[tuple[str, bytes, str]]:
    """(name, html bytes, gold text) for the gne pages, the readability_zh references, the CWCE pages
    and the newspaper4k pages."""
    pages = [(name, (DATA / "gne" / f"{name}.html").read_bytes(), gold) for name, gold in gne_gold().items()]
    for d in sorted((DATA / "readability_zh").iterdir()):
        if (d / "expected.html").exists():
            ref = lxml.html.fromstring((d / "expected.html").read_bytes().decode("utf-8"))
            pages.append((f"readability:{d.name}", (d / "source.html").read_bytes(), ref.text_content()))
    return pages + cwce_pages() + newspaper4k_pages()


# Site names of CWCE pages whose index row has no URL (the modern pages): read off each page's
# canonical link, logo or title by hand.  The split is by site, so a page needs its site's name.
CWCE_SITES = {
    "0ef8393b": "rfi", "2397c95d": "hanspub", "274a65d9": "dahe", "36efbc69": "36efbc69", "3e1af229": "shjnet",
    "47f387e6": "cbzw", "500b350d": "bynr", "658d9f03": "bilibili", "91bdf33e": "henandaily",
    "9890f458": "yndaily", "aefcf136": "chinatibetnews", "b26fbb82": "people", "c4d032a1": "tywbw",
    "d232c5df": "nmg", "d5bced5e": "wikipedia", "d8d4c4ec": "sohu", "d96c76b7": "51offer", "e8847578": "jl",
    "f51248cc": "yangtse", "f70d9c97": "cnr",
}
HOST_SUFFIX = re.compile(r"\.(com|net|org|edu|gov|ac)?\.?(cn|com|net|org|tw|hk)$")
CLEANEVAL_WRAPPER = re.compile(rb"^\s*<text\b[^>]*>[^\n]*\n")
SITE_NAMED = ("cwce", "newspaper4k", "twnews", "cx")


def site_of_url(url: str) -> str:
    """The registered name of a URL's host: http://cn.news.yahoo.com/x -> yahoo, biz.163.com -> 163."""
    host = re.sub(r"^\w+://", "", url).split("/")[0].split(":")[0].lower()
    return HOST_SUFFIX.sub("", host).split(".")[-1]


def cwce_pages() -> list[tuple[str, bytes, str]]:
    """Chinese-Web-Content-Extraction-Dataset: html (CleanEval <text ...> wrapper line dropped) and the
    hand-copied body (*.cleaned.txt); named cwce:SITE/ID."""
    root = DATA / "chinese-web-content-extraction-dataset"
    if not (root / "index.tsv").exists():
        return []
    out = []
    for row in (root / "index.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        cols = row.split("\t")
        stem, url = cols[0][:-len(".html")], cols[2] if cols[1] == "True" else ""
        site = site_of_url(url) if url else CWCE_SITES[stem[:8]]
        raw = CLEANEVAL_WRAPPER.sub(b"", (root / cols[0]).read_bytes(), count=1)
        gold = (root / f"{stem}.cleaned.txt").read_text(encoding="utf-8", errors="replace")
        out.append((f"cwce:{site}/{stem[:8]}", raw, gold))
    return out


NEWSPAPER4K_SITES = {"chinese_article": "bbc", "chinese_article_001": "chinadaily", "chinese_article_002": "xinhuanet"}


def newspaper4k_pages() -> list[tuple[str, bytes, str]]:
    """newspaper4k's three Chinese test pages with their expected body text; named newspaper4k:SITE/NAME."""
    root = DATA / "newspaper4k"
    return [(f"newspaper4k:{site}/{name}", (root / f"{name}.html").read_bytes(),
             (root / f"{name}.gold.txt").read_text(encoding="utf-8"))
            for name, site in NEWSPAPER4K_SITES.items() if (root / f"{name}.html").exists()]


TWNEWS_SENTENCE = re.compile(r"def test_01_sample.*?assertIn\('([^']+)',\s*nsoup\.contents\(\)\)", re.S)


def twnews_checks() -> list[tuple[str, bytes, str]]:
    """Taiwan pages (traditional script) with the one body sentence their tests assert: a recall check only."""
    root = DATA / "twnews"
    out = []
    for test in sorted(root.glob("test_soup_*.py")):
        site = test.stem[len("test_soup_"):]
        m = TWNEWS_SENTENCE.search(test.read_text(encoding="utf-8"))
        if m and (root / f"{site}.html").exists():
            out.append((f"twnews:{site}/{site}", (root / f"{site}.html").read_bytes(), m.group(1)))
    return out


PIRATE_ADS = ("手机用户请浏览m.biquge.info阅读，更优质的阅读体验。",
              "天才一秒记住本站地址：[笔趣阁] https://www.biquge.info 最快更新！无广告！",
              "（本章未完，点击下一页继续阅读）")
PIRATE_NAV = ("<div class='bottem'><a href='/1/'>上一章</a> ← <a href='/'>章节目录</a> → "
              "<a href='/3/'>下一章</a> <a href='#'>加入书签</a></div>")


def pirate_chapter_page(book: str, title: str, text: str, encoding: str = "gbk") -> bytes:
    """A chapter as a pirate novel site serves it: nav bars, an ad line at the top, in the middle and
    at the end of the chapter container, <br>-separated paragraphs, GBK bytes."""
    paras = [p.strip() for p in re.split(r"[\n\u3000]+", text) if p.strip()]
    mid = len(paras) // 2
    body = [PIRATE_ADS[0]] + paras[:mid] + [PIRATE_ADS[1]] + paras[mid:] + [PIRATE_ADS[2]]
    content = "<br /><br />".join("&nbsp;&nbsp;&nbsp;&nbsp;" + p for p in body)
    html = (f"<html><head><meta http-equiv='Content-Type' content='text/html; charset={encoding}'>"
            f"<title>{title}_{book}_笔趣阁</title></head><body>"
            "<div class='header'><a href='/'>笔趣阁</a> <a href='/xuanhuan/'>玄幻小说</a> "
            "<a href='/xiuzhen/'>修真小说</a> <a href='/history/'>历史小说</a></div>"
            f"<div class='bookname'><h1>{title}</h1>{PIRATE_NAV}</div>"
            f"<div id='content'>{content}</div>{PIRATE_NAV}"
            "<div class='footer'>本站所有小说为转载作品，所有章节均由网友上传，转载至本站只是为了宣传，"
            "让更多读者欣赏。Copyright © 2019 笔趣阁 All Rights Reserved.</div></body></html>")
    return html.encode(encoding, errors="ignore")


def novel_pages(n: int = 6) -> list[tuple[str, bytes, str]]:
    """(name, pirate page bytes, chapter text) for the first chapter of n public-domain novels."""
    seen, out = set(), []
    with open(DATA.parent / "fiction_classics_dev.jsonl", encoding="utf-8") as fh:
        for line in fh:
            ch = json.loads(line)
            if ch["book"] in seen or len(ch["text"]) > 8000:
                continue
            seen.add(ch["book"])
            gold = "\n".join(p.strip() for p in re.split(r"[\n\u3000]+", ch["text"]) if p.strip())
            out.append((f"novel:{ch['book']}", pirate_chapter_page(ch["book"], ch["chapter_title"], ch["text"]), gold))
            if len(out) == n:
                break
    return out


def snippet_checks() -> list[dict]:
    """trafilatura_zh evaldata: share of 'with' snippets found and 'without' snippets absent."""
    meta = json.loads((DATA / "trafilatura_zh" / "evaldata_zh_subset.json").read_text(encoding="utf-8"))
    rows = []
    for url, case in meta.items():
        raw = (DATA / "trafilatura_zh" / case["file"]).read_bytes()
        row = {"page": case["file"]}
        for name, fn in (("product", lambda b: product_url(b, url)), ("trafilatura", plain)):
            out = fn(raw)
            ok = sum(s in out for s in case.get("with", [])) + sum(s not in out for s in case.get("without", []))
            row[name] = ok / max(1, len(case.get("with", [])) + len(case.get("without", [])))
        rows.append(row)
    return rows


def product_url(raw: bytes, url: str) -> str:
    """The product with the page's URL (as the crawler calls it)."""
    return product(raw, url)


def run(repeat: int, split: str = "all") -> dict:
    """Score and time every gold page of the split with the product, the previous code and trafilatura."""
    rows = []
    pages = [p for p in gold_pages() + novel_pages() if in_split(p[0], split)]
    product(pages[0][1]), plain(pages[0][1]), previous(pages[0][1])  # warm-up: imports, first-call caches
    for name, raw, gold in pages:   # the three extractors timed page by page, one after the other (same load)
        ours, t_ours = timed(product, raw, repeat)
        base, t_base = timed(plain, raw, repeat)
        prev, t_prev = timed(previous, raw, repeat)
        rows.append({"page": name, "set": set_of(name), "site": site_of(name), "ours": prf(gold, ours),
                     "base": prf(gold, base), "prev": prf(gold, prev), "ms_ours": t_ours, "ms_base": t_base,
                     "ms_prev": t_prev, "base_empty": not base.strip()})
    sentences = [twnews_row(name, raw, sentence) for name, raw, sentence in twnews_checks() if in_split(name, split)]
    return {"split": split, "rows": rows, "sentences": sentences, "tails": tail_checks(split),
            "snippets": snippet_checks() if split == "all" else []}


def twnews_row(name: str, raw: bytes, sentence: str) -> dict:
    """A Taiwan page: its asserted sentence found or not, and the tail lines left (read in simplified script)."""
    from extract.script import to_simplified
    ours, base = product(raw), plain(raw)
    return {"page": name, "product": sentence in ours, "trafilatura": sentence in base,
            "tail_product": tail_lines(to_simplified(ours)), "tail_trafilatura": tail_lines(to_simplified(base))}


def tail_lines(text: str) -> int:
    """Lines of an article's tail left in a body: dated headlines, related headings, share/disclaimer lines, page-function
    bars and portal closing lines."""
    from extract.boilerplate import RELATED_HEAD, RELATED_INLINE, TAIL_MARK, is_stamp
    from extract.tails import is_closing_line, is_function_bar, is_notice_head
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    return sum(is_stamp(x) or bool(TAIL_MARK.search(x) or RELATED_INLINE.search(x) or RELATED_HEAD.match(x))
               or is_function_bar(x) or is_closing_line(x) or is_notice_head(x) for x in lines)


def tail_checks(split: str) -> list[dict]:
    """The 74 NetEase finance pages (no gold; site 163): tail lines left in each extractor's body."""
    root = DATA / "cx-extractor-python-netease"
    if not in_split("cx:163/x", split) or not root.exists():
        return []
    return [{"page": f.name, "product": tail_lines(product(f.read_bytes())), "trafilatura": tail_lines(plain(f.read_bytes()))}
            for f in sorted(root.glob("*.html"))]


SETS = (("gne", "gne (44 pages, gold: tests/extract/gold)"), ("readability_zh", "readability_zh"),
        ("cwce", "chinese-web-content-extraction-dataset"), ("newspaper4k", "newspaper4k"),
        ("novel", "pirate novel pages (generic path, no profile)"))


def set_of(page: str) -> str:
    """The data set a page belongs to: gne, readability_zh, cwce, newspaper4k or novel."""
    if ":" not in page:
        return "gne"
    kind = page.split(":", 1)[0]
    return "readability_zh" if kind == "readability" else kind


def template_run(templates: bool, warmup_seconds: float = 5.0) -> dict:
    """The generated template site through ExtractPipeline and the dedup engine, site A then site B."""
    from benchmarks.template_site import COPIED, COPIED_LONG, N_LONG, N_STORIES, template_sites
    from extract.template import SiteTemplates
    from fingerprint.neardup import DedupDoc, DedupEngine
    from pipelines.drops import SkippedItem
    from pipelines.extract import ExtractPipeline

    import asyncio

    pipe = ExtractPipeline(templates=SiteTemplates() if templates else None, warmup_seconds=warmup_seconds)
    engine, kept, dropped = DedupEngine(), [], {}

    async def extract_site(site: str, pages: dict) -> list:   # a site's pages in flight together, as in a crawl
        return await asyncio.gather(*(pipe.process_item({"url": f"http://{site}.example{path}", "site": site,
                                                         "body": page.encode("utf-8")}) for path, page in pages.items()),
                                    return_exceptions=True)

    for site, pages in template_sites().items():
        for item in asyncio.run(extract_site(site, pages)):
            if isinstance(item, SkippedItem):
                continue
            url = item["url"]
            verdict = engine.decide(DedupDoc.of(url, item["text"]))
            if verdict.is_duplicate:
                dropped[url] = verdict.original
            else:
                kept.append(url)
    merged = [u for u in dropped if "//a." in u]
    copies = {str(i): f"http://b.example/r/{i}.html" in dropped for i in COPIED}
    copies.update({f"long {i}": f"http://b.example/r/l{i}.html" in dropped for i in COPIED_LONG})
    return {"stories": N_STORIES + N_LONG, "stored_a": sum("//a." in u for u in kept), "merged": len(merged),
            "copies_dropped": copies}


def template_report() -> None:
    """One line per setting: distinct short stories stored once, reprints on site B dropped."""
    print("\nsite templates: 32 distinct short Sina stories (80-300 chars) and 4 long articles, each with one"
          " 800-char block, on site A; plain reprints of stories 0 (first page seen), 10, 20 and long 0 on site B")
    for label, on, wait in (("off", False, 0.0), ("on, no warm-up wait", True, 0.0), ("on (default)", True, 5.0)):
        r = template_run(on, wait)
        copies = ", ".join(f"{i}: {'dropped' if d else 'KEPT'}" for i, d in r["copies_dropped"].items())
        print(f"  templates {label:<20} stored {r['stored_a']}/{r['stories']}  "
              f"merged as duplicates {r['merged']}   reprints on B: {copies}")


def report(result: dict, worst: int = 8) -> None:
    """Print the per-page table, the averages per data set and the pages furthest below trafilatura."""
    rows = result["rows"]
    print(f"split: {result['split']} ({len({r['site'] for r in rows})} sites)   previous code: git {PREVIOUS}")
    print(f"{'page':38s} {'ours P/R/F1':>20s} {'previous P/R/F1':>20s} {'trafilatura P/R/F1':>20s} "
          f"{'ms ours':>8s} {'ms traf':>8s}")
    for r in rows:
        o, v, b = r["ours"], r["prev"], r["base"]
        flag = "  <-- worse" if o[2] < b[2] - 0.02 else ""
        print(f"{r['page']:38s} {o[0]:.2f}/{o[1]:.2f}/{o[2]:.3f}     {v[0]:.2f}/{v[1]:.2f}/{v[2]:.3f}     "
              f"{b[0]:.2f}/{b[1]:.2f}/{b[2]:.3f}  {r['ms_ours']:8.1f} {r['ms_base']:8.1f}{flag}")
    for key, label in SETS + (("all", "all"),):
        sel = rows if key == "all" else [r for r in rows if r["set"] == key]
        if not sel:
            continue
        avg = [statistics.mean(r[k][i] for r in sel) for k in ("ours", "base", "prev") for i in range(3)]
        t_o, t_b, t_p = (sum(r[k] for r in sel) for k in ("ms_ours", "ms_base", "ms_prev"))
        worse = sum(r["ours"][2] < r["base"][2] - 0.02 for r in sel)
        far = sum(r["ours"][2] < r["base"][2] - 0.10 for r in sel)
        print(f"\n{label}: {len(sel)} pages, {len({r['site'] for r in sel})} sites")
        print(f"  product      P {avg[0]:.3f} R {avg[1]:.3f} F1 {avg[2]:.3f}   {t_o / len(sel):.1f} ms/page")
        print(f"  previous     P {avg[6]:.3f} R {avg[7]:.3f} F1 {avg[8]:.3f}   {t_p / len(sel):.1f} ms/page = "
              f"{t_p / t_b:.2f}x trafilatura (git {PREVIOUS})")
        print(f"  trafilatura  P {avg[3]:.3f} R {avg[4]:.3f} F1 {avg[5]:.3f}   {t_b / len(sel):.1f} ms/page")
        both = [r for r in sel if not r.get("base_empty")]   # trafilatura gives up fast on pages it cannot decode
        t_o2, t_b2 = sum(r["ms_ours"] for r in both), sum(r["ms_base"] for r in both)
        print(f"  time ratio {t_o / t_b:.2f}x ({t_o2 / max(t_b2, 1e-9):.2f}x on the {len(both)} pages where trafilatura "
              f"returns a body)   pages worse than trafilatura by > 0.02: {worse}, by > 0.10: {far}")
        if key != "all":
            worst_of_set = sorted(sel, key=lambda r: (r["ours"][2] - r["base"][2], r["ours"][2]))[:3]
            print("  worst: " + ", ".join(f"{r['page']} {r['ours'][2]:.3f} (trafilatura {r['base'][2]:.3f})"
                                          for r in worst_of_set))
    print(f"\nworst {worst} pages (product F1 minus trafilatura F1):")
    for r in sorted(rows, key=lambda r: r["ours"][2] - r["base"][2])[:worst]:
        o, b = r["ours"], r["base"]
        print(f"  {r['page']:42s} {o[2] - b[2]:+.3f}   product {o[0]:.2f}/{o[1]:.2f}/{o[2]:.3f}   "
              f"trafilatura {b[0]:.2f}/{b[1]:.2f}/{b[2]:.3f}")
    if result.get("sentences"):
        found = [(s["product"], s["trafilatura"]) for s in result["sentences"]]
        print(f"\ntwnews (traditional script; only one body sentence is asserted: recall check): sentence found "
              f"product {sum(f[0] for f in found)}/{len(found)}, trafilatura {sum(f[1] for f in found)}/{len(found)}")
        for s in result["sentences"]:
            print(f"  {s['page']:38s} product {'yes' if s['product'] else 'NO '}  trafilatura "
                  f"{'yes' if s['trafilatura'] else 'NO'}   tail lines left: product {s['tail_product']}, "
                  f"trafilatura {s['tail_trafilatura']}")
    if result.get("tails"):
        tails = result["tails"]
        print(f"\nNetEase finance pages (cx-extractor, no gold, site 163): pages whose body keeps tail lines (dated "
              f"headlines, related headings, share/disclaimer lines): product "
              f"{sum(t['product'] > 0 for t in tails)}/{len(tails)}, trafilatura {sum(t['trafilatura'] > 0 for t in tails)}"
              f"/{len(tails)}")
    if result["snippets"]:
        print("\ntrafilatura_zh snippets (share of with/without checks passed):")
    for s in result["snippets"]:
        print(f"  {s['page']:55s} product {s['product']:.2f}  trafilatura {s['trafilatura']:.2f}")


def main() -> None:
    """Run the benchmark and print (optionally save) the results."""
    ap = OneLineParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=SPLITS, default="all",
                    help="pages of the tune half, the report half (sites never tuned on) or all")
    ap.add_argument("--repeat", type=int, default=3, help="timing: best of N runs per page")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--no-templates", action="store_true", help="skip the site-template run")
    ap.add_argument("--previous", default=PREVIOUS, help=f"git commit of the previous code (default {PREVIOUS})")
    args = ap.parse_args()
    set_previous(args.previous)
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, not {args.repeat}")
    result = run(args.repeat, args.split)
    report(result)
    if not args.no_templates:
        template_report()
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
