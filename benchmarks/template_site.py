"""A generated site whose short stories all carry one 800-character related block, and a reprint site.

Used by the crawl test (tests/crawler/test_crawl_templates.py, over loopback HTTP) and the site-template
line of benchmarks/bench_extraction.py (same pages through ExtractPipeline and the dedup engine).
Stories are real Sina texts of 80-300 characters from the shared data (benchmarks.shared_data.NEWS_FILE).
"""
from __future__ import annotations

import json
from html import escape

from benchmarks.shared_data import NEWS_FILE

N_STORIES = 32
N_LONG = 4               # long articles (1,000-3,000 characters) on site A too, with the same block
COPIED = (0, 10, 20)     # stories reprinted on the second site (0 is the first page the crawl may see)
COPIED_LONG = (0,)       # long articles reprinted on the second site
BLOCK_CHARS = 800


def sina_texts(n: int, lo: int = 80, hi: int = 300) -> list[dict]:
    """The first n Sina stories of lo..hi characters that are not near duplicates of one picked before
    (the data holds a few reprints of one story)."""
    from fingerprint.neardup import is_near_duplicate

    out: list[dict] = []
    with NEWS_FILE.open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            text = " ".join(d["text"].split())
            if lo <= len(text) <= hi and not any(is_near_duplicate(o["text"], text).is_duplicate for o in out):
                out.append({"title": d["title"], "text": text})
                if len(out) == n:
                    break
    return out


def related_block(chars: int = BLOCK_CHARS) -> list[str]:
    """Lines of a related-reading block (other stories' titles and leads) adding up to about `chars`."""
    lines, total = [], 0
    for d in sina_texts(12, 300, 3000):
        lead = d["text"].split("。")[0][:90] + "。"
        line = f"{d['title']}：{lead}"
        lines.append(line)
        total += len(line)
        if total >= chars:
            break
    return lines


def story_page(title: str, text: str, block: list[str], site_name: str) -> str:
    """A story page: nav, headline, the story, then the site's block inside the same container."""
    extra = "".join(f"<p>{escape(x)}</p>" for x in block)
    return (f'<html><head><meta charset="utf-8"><title>{escape(title)}_{site_name}</title></head><body>'
            f'<div class="top"><a href="/">{site_name}</a></div><div class="main"><h1>{escape(title)}</h1>'
            f'<div class="meta">发布时间：2025-03-22</div><div id="artibody"><p>{escape(text)}</p>{extra}</div>'
            f'</div></body></html>')


def home(paths: list[str], site_name: str) -> str:
    """The start page: a list of links to every story."""
    items = "".join(f'<li><a href="{p}">文章{i}</a></li>' for i, p in enumerate(paths))
    return (f'<html><head><meta charset="utf-8"><title>{site_name}</title></head>'
            f'<body><ul>{items}</ul></body></html>')


def long_texts(n: int, block: list[str]) -> list[dict]:
    """n real articles of 1,000-3,000 characters whose leads are not in the block."""
    return [d for d in sina_texts(n + 12, 1000, 3000) if not any(x.startswith(d["title"] + "：") for x in block)][:n]


def template_sites() -> dict[str, dict[str, str]]:
    """{'a': {path: html}, 'b': {path: html}}: site A (short stories and long articles, all with the block),
    site B (plain reprints of COPIED stories and COPIED_LONG articles)."""
    stories, block = sina_texts(N_STORIES), related_block()
    articles = long_texts(N_LONG, block)
    a = {f"/s/{i}.html": story_page(s["title"], s["text"], block, "A网") for i, s in enumerate(stories)}
    a.update({f"/l/{i}.html": story_page(d["title"], d["text"], block, "A网") for i, d in enumerate(articles)})
    a["/"] = home(sorted(a), "A网")
    b = {f"/r/{i}.html": story_page(stories[i]["title"], stories[i]["text"], [], "B报") for i in COPIED}
    b.update({f"/r/l{i}.html": story_page(articles[i]["title"], articles[i]["text"], [], "B报") for i in COPIED_LONG})
    b["/"] = home(sorted(b), "B报")
    return {"a": a, "b": b}
