"""Page kind accuracy: precision and recall of "article" for the spider's test, extraction, and both together.

  python -m benchmarks.bench_pagekind [--n 60] [--json OUT]

Pages (labels in brackets):
- real pages in /work/shared/data/html_zh: gne/tests_* [article], gne/test_list_page_* [list],
  readability_zh/*/source.html [article], trafilatura_zh/*.html [article: each has a main text, see
  evaldata_zh_subset.json];
- generated from real Sina texts (news_sina_dev.jsonl), inside site chrome (channel menu, hot-news ranking,
  footer): short briefs of 80-300 characters followed by a 相关阅读 block of 12 links (after the article
  container, or inside it one link per paragraph), a comment list,
  上一篇/下一篇 links, or a photo gallery caption with thumbnails [article]; and list pages: headline lists,
  headline + teaser lists, paginated channel pages, portal home pages with several channel boxes [list].

Decisions measured, each with the current code and the code at benchmarks.baseline_git.BASELINE (loaded
from git history in the same run):
- spider: NewsSpider.page_kind on the page (auto mode, as for ``-a start_urls``), the real spider method;
- extract: extract() returns a body (NotArticle / NoBody = not an article);
- stored: both (the page reaches storage).
Goal (issue 15): precision and recall of "article" >= 0.99 for "stored".  The baseline's spider figures
vary a little from run to run: its page_shape keyed blocks by id() of lxml proxies, which Python reuses.
"""
from __future__ import annotations

import argparse
import json
import random
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from scrapy import Request
from scrapy.http import HtmlResponse

from benchmarks.baseline_git import BASELINE, old_modules
from benchmarks.shared_data import DATA_DIR as DATA
from crawler.siteprofiles import profile_from_dict
from crawler.spiders import news as news_module
from crawler.spiders.base import root_of
from crawler.spiders.news import NewsSpider
from extract import pagekind
from extract.pagekind import PageFacts
from extract.article import NotArticle, extract

HTML = DATA / "html_zh"
SENTENCE = re.compile(r"[^。！？]*[。！？]")
KINDS = ("related", "related_inline", "comments", "prevnext", "gallery", "headlines", "teasers", "paged", "portal")


def real_pages() -> list[tuple[str, str, bytes, bool]]:
    """(name, url, html bytes, is_article) for the shared real pages."""
    out = []
    for f in sorted((HTML / "gne").glob("*.html")):
        out.append((f"gne:{f.stem}", "", f.read_bytes(), not f.stem.startswith("test_list_page")))
    for d in sorted((HTML / "readability_zh").iterdir()):
        if (d / "source.html").exists():
            out.append((f"readability:{d.name}", "", (d / "source.html").read_bytes(), True))
    meta = json.loads((HTML / "trafilatura_zh" / "evaldata_zh_subset.json").read_text(encoding="utf-8"))
    for url, case in sorted(meta.items()):
        out.append((f"trafilatura:{case['file']}", url, (HTML / "trafilatura_zh" / case["file"]).read_bytes(), True))
    return out


def sina(n: int) -> list[dict]:
    """The first n Sina articles with at least 3 sentences (deterministic)."""
    out = []
    with open(DATA / "news_sina_dev.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            # the dataset joins paragraphs: a leading 原标题/来源 credit would swallow a brief's first line
            if (len(SENTENCE.findall(doc["text"])) >= 3 and 8 <= len(doc["title"]) <= 40
                    and not doc["text"].lstrip().startswith(("原标题", "（原标题", "(原标题"))):
                out.append(doc)
                if len(out) == n:
                    break
    return out


def brief(text: str, target: int) -> str:
    """Whole sentences of a text, about `target` characters (80..300)."""
    out = ""
    for s in SENTENCE.findall(re.sub(r"\s+", "", text)):
        if len(out) + len(s) > target and len(out) >= 80:
            break
        out += s
    return out[:300]


def chrome(title: str, main: str) -> str:
    """A news site page around `main`: channel menu, hot ranking sidebar, footer."""
    nav = "".join(f"<li><a href='/{c}/'>{c}</a></li>" for c in
                  ("首页", "国内", "国际", "社会", "财经", "科技", "体育", "娱乐", "军事", "汽车", "房产", "教育",
                   "健康", "旅游", "视频", "图片"))
    return (f"<html><head><meta charset='utf-8'><title>{title}_新闻中心_示例网</title></head><body>"
            f"<div class='top'><ul class='nav'>{nav}</ul></div><div class='wrap'>{main}</div>"
            "<div class='footer'><p>关于我们 | 联系我们 | 广告服务</p><p>Copyright © 2018 示例网 版权所有 "
            "京ICP证000000号</p></div></body></html>")


def hot(docs: list[dict], k: int = 10) -> str:
    """A hot-news ranking sidebar of k links."""
    items = "".join(f"<li><em>{i + 1}</em><a href='/n/{9000 + i}.html'>{d['title']}</a></li>"
                    for i, d in enumerate(docs[:k]))
    return f"<div class='side'><h3>热点排行</h3><ul>{items}</ul></div>"


def article_page(kind: str, doc: dict, others: list[dict], rng: random.Random) -> str:
    """A short brief with a block that is not article text (related links, comments, pager, gallery)."""
    text = brief(doc["text"], rng.randint(80, 300))
    head = f"<h1>{doc['title']}</h1><div class='info'>2018-11-0{rng.randint(1, 9)} 10:2{rng.randint(0, 9)} 来源：示例网</div>"
    if kind == "gallery":
        thumbs = "".join(f"<li><a href='/photo/{i}.html'><img src='/p/{i}.jpg'></a></li>" for i in range(12))
        body = (f"<div class='gallery'><div class='pic'><img src='/p/0.jpg'></div><div class='count'>1/12</div>"
                f"<p class='caption'>{text}</p><ul class='thumbs'>{thumbs}</ul></div>")
    elif kind == "related_inline":   # the related block inside the article container, one link per <p>
        links = "".join(f"<p><a href='/n/{100 + i}.html'>{o['title']}</a></p>" for i, o in enumerate(others[:12]))
        body = f"<div class='content'><p>{text}</p><p><strong>相关阅读：</strong></p>{links}</div>"
    else:
        body = f"<div class='content'><p>{text}</p></div>"
    if kind == "related":
        links = "".join(f"<li><a href='/n/{100 + i}.html'>{o['title']}</a></li>" for i, o in enumerate(others[:12]))
        body += f"<div class='related'><h3>相关阅读</h3><ul>{links}</ul></div>"
    elif kind == "comments":
        items = "".join(f"<li><a href='/u/{i}'>网友{rng.randint(1000, 9999)}</a><span>{brief(o['text'], 20)[:40]}</span>"
                        f"<em>{rng.randint(1, 99)}赞</em></li>" for i, o in enumerate(others[:8]))
        body += f"<div class='comments'><h3>网友评论</h3><ul>{items}</ul><a href='/c/more'>查看更多评论</a></div>"
    elif kind == "prevnext":
        body += (f"<div class='pager'><p>上一篇：<a href='/n/1.html'>{others[0]['title']}</a></p>"
                 f"<p>下一篇：<a href='/n/2.html'>{others[1]['title']}</a></p></div>")
    return chrome(doc["title"], f"<div class='main'>{head}{body}</div>{hot(others[2:])}")


def list_page(kind: str, docs: list[dict], rng: random.Random) -> str:
    """A list page: headlines, headlines with teasers, a paginated channel page or a portal home page."""
    date = lambda: f"<span class='time'>2018-11-{rng.randint(10, 30)} {rng.randint(10, 23)}:{rng.randint(10, 59)}</span>"
    if kind == "headlines":
        items = "".join(f"<li><a href='/n/{i}.html'>{d['title']}</a>{date()}</li>" for i, d in enumerate(docs[:30]))
        main = f"<div class='list'><h2>国内新闻</h2><ul>{items}</ul></div>"
    elif kind == "teasers":
        items = "".join(f"<div class='item'><h3><a href='/n/{i}.html'>{d['title']}</a></h3>"
                        f"<p>{brief(d['text'], rng.randint(40, 90))[:90]}</p>{date()}</div>" for i, d in enumerate(docs[:15]))
        main = f"<div class='list'>{items}</div>"
    elif kind == "paged":
        items = "".join(f"<li><a href='/n/{i}.html'>{d['title']}</a>{date()}</li>" for i, d in enumerate(docs[:20]))
        pages = "".join(f"<a href='/list_{i}.html'>{i}</a>" for i in range(1, 11))
        main = f"<div class='list'><ul>{items}</ul><div class='pages'>{pages}<a href='/list_2.html'>下一页</a></div></div>"
    else:
        boxes = "".join(f"<div class='box'><h2><a href='/{c}/'>{c}</a></h2><ul>" +
                        "".join(f"<li><a href='/n/{j}{i}.html'>{d['title']}</a></li>" for i, d in enumerate(docs[j * 6:j * 6 + 6])) +
                        "</ul></div>" for j, c in enumerate(("要闻", "财经", "科技", "体育")))
        main = f"<div class='focus'><a href='/n/1.html'><img src='/f.jpg'>{docs[0]['title']}</a></div>{boxes}"
    return chrome("国内新闻", main + hot(docs[-10:]))


def generated(n: int, seed: int = 15) -> list[tuple[str, str, bytes, bool]]:
    """n generated pages of each kind: (name, url, html bytes, is_article)."""
    rng = random.Random(seed)
    docs = sina(n * 4 + 40)
    out = []
    for kind in KINDS:
        for i in range(n):
            doc = docs[(i * 7 + KINDS.index(kind)) % len(docs)]
            others = [docs[(i * 13 + j + 1) % len(docs)] for j in range(30)]
            if kind in ("headlines", "teasers", "paged", "portal"):
                html, url, label = list_page(kind, others, rng), f"http://127.0.0.1:8000/{kind}/list_{i}.html", False
            else:
                html, label = article_page(kind, doc, others, rng), True
                url = (f"http://127.0.0.1:8000/a/2018/11/0{i % 9 + 1}/{100000 + i}.html" if i % 2
                       else f"http://127.0.0.1:8000/show.php?id={i}")   # half without an article-shaped URL
            out.append((f"{kind}:{i}", url, html.encode("utf-8"), label))
    return out


@contextmanager
def spider_pagekind(module) -> Iterator[None]:
    """Run the real NewsSpider.page_kind with another pagekind module (the baseline's)."""
    saved = news_module.pagekind
    news_module.pagekind = module
    try:
        yield
    finally:
        news_module.pagekind = saved


def spider_says_article(spider: NewsSpider, url: str, raw: bytes) -> bool:
    """NewsSpider.page_kind on an HtmlResponse of the page (auto target, as with -a start_urls)."""
    url = url or "http://127.0.0.1:8000/page.html"
    response = HtmlResponse(url, body=raw, request=Request(url))
    target = profile_from_dict({"name": "bench", "start_urls": [url]}, "start_urls")
    root, module = root_of(response), news_module.pagekind   # the facts a worker sends, by the module in use
    facts = PageFacts(url, module.heading_text(root), (), (), None, module.page_shape(root))
    return spider.page_kind(response, facts, target)[0] == "article"


def extractor(fn: Callable, exc: type) -> Callable[[str, bytes], bool]:
    """True when `fn` finds an article body."""
    def run(url: str, raw: bytes) -> bool:
        try:
            fn(raw, url=url)
            return True
        except exc:
            return False
    return run


def prf(rows: list[tuple[bool, bool]]) -> tuple[float, float, int, int]:
    """(precision, recall, false positives, false negatives) of "article" over (label, decision) pairs."""
    tp = sum(1 for y, d in rows if y and d)
    fp = sum(1 for y, d in rows if not y and d)
    fn = sum(1 for y, d in rows if y and not d)
    return tp / max(1, tp + fp), tp / max(1, tp + fn), fp, fn


def run(n: int) -> dict:
    """Decisions of the new and the baseline code on every page."""
    from scrapy.utils.test import get_crawler
    spider = NewsSpider.from_crawler(get_crawler(NewsSpider), start_urls="http://127.0.0.1:8000/")
    spider.crawler.stats.open_spider()
    old = old_modules()
    pages = real_pages() + generated(n)
    versions = {"new": (pagekind, extractor(extract, NotArticle)),
                "old": (old.pagekind, extractor(old.extract.extract, old.extract.NoBody))}
    rows = []
    for name, url, raw, label in pages:
        row = {"page": name, "article": label}
        for version, (kind_module, ext) in versions.items():
            with spider_pagekind(kind_module):
                s = spider_says_article(spider, url, raw)
            e = ext(url, raw)
            row[version] = {"spider": s, "extract": e, "stored": s and e}
        rows.append(row)
    return {"rows": rows, "baseline": BASELINE, "n": n}


def report(result: dict) -> None:
    """Per-group precision/recall of "article", new next to the baseline, and the misclassified pages."""
    rows = result["rows"]
    groups = {"real pages": [r for r in rows if ":" in r["page"] and r["page"].split(":")[0] in
                             ("gne", "readability", "trafilatura")]}
    groups["generated"] = [r for r in rows if r not in groups["real pages"]]
    for kind in KINDS:
        groups[f"  {kind}"] = [r for r in rows if r["page"].startswith(kind + ":")]
    groups["all"] = rows
    print(f"precision / recall of 'article' (false pos, false neg); old = {result['baseline']}\n")
    print(f"{'pages':16s} {'n':>4s}  " + "  ".join(f"{d + ' ' + v:>22s}" for d in ("spider", "extract", "stored")
                                              for v in ("old", "new")))
    for label, sel in groups.items():
        cells = []
        for decision in ("spider", "extract", "stored"):
            for version in ("old", "new"):
                p, r, fp, fn = prf([(x["article"], x[version][decision]) for x in sel])
                cells.append(f"{p:.3f}/{r:.3f} ({fp},{fn})")
        print(f"{label:16s} {len(sel):4d}  " + "  ".join(f"{c:>22s}" for c in cells))
    wrong = [r["page"] for r in rows if r["new"]["stored"] != r["article"]]
    print(f"\nmisclassified by the new code (stored != label): {', '.join(wrong) or 'none'}")


def main() -> None:
    """Run the benchmark and print (optionally save) the results."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=60, help="generated pages of each kind")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    args = ap.parse_args()
    result = run(args.n)
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
